build2/obj/src/store/blob.o: src/store/blob.c src/store/blob.h \
 include/coffer.h src/store/blob_s3.h src/util/util.h
src/store/blob.h:
include/coffer.h:
src/store/blob_s3.h:
src/util/util.h:
