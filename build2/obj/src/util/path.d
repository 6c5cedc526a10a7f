build2/obj/src/util/path.o: src/util/path.c src/util/util.h \
 include/coffer.h
src/util/util.h:
include/coffer.h:
