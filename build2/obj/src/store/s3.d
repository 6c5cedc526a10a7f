build2/obj/src/store/s3.o: src/store/s3.c src/store/s3.h include/coffer.h \
 src/util/util.h
src/store/s3.h:
include/coffer.h:
src/util/util.h:
