build2/obj/src/store/blob_s3.o: src/store/blob_s3.c src/store/blob.h \
 include/coffer.h src/store/blob_s3.h src/store/s3.h src/util/util.h
src/store/blob.h:
include/coffer.h:
src/store/blob_s3.h:
src/store/s3.h:
src/util/util.h:
