build2/obj/src/util/base64.o: src/util/base64.c src/util/util.h \
 include/coffer.h
src/util/util.h:
include/coffer.h:
