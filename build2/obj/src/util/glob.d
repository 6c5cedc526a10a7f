build2/obj/src/util/glob.o: src/util/glob.c src/util/util.h \
 include/coffer.h
src/util/util.h:
include/coffer.h:
