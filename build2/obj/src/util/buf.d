build2/obj/src/util/buf.o: src/util/buf.c src/util/util.h \
 include/coffer.h
src/util/util.h:
include/coffer.h:
