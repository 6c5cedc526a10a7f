build2/obj/src/util/misc.o: src/util/misc.c src/util/util.h \
 include/coffer.h
src/util/util.h:
include/coffer.h:
