build2/obj/src/util/alloc.o: src/util/alloc.c src/util/util.h \
 include/coffer.h
src/util/util.h:
include/coffer.h:
