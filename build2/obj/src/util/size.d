build2/obj/src/util/size.o: src/util/size.c src/util/util.h \
 include/coffer.h
src/util/util.h:
include/coffer.h:
