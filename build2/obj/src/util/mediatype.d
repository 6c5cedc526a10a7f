build2/obj/src/util/mediatype.o: src/util/mediatype.c src/util/util.h \
 include/coffer.h
src/util/util.h:
include/coffer.h:
