build2/obj/src/store/blob_local.o: src/store/blob_local.c \
 src/store/blob.h include/coffer.h src/util/util.h
src/store/blob.h:
include/coffer.h:
src/util/util.h:
