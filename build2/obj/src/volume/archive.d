build2/obj/src/volume/archive.o: src/volume/archive.c \
 src/volume/archive.h include/coffer.h src/volume/volume.h \
 src/store/store.h src/store/blob.h src/store/meta.h src/util/util.h \
 src/store/notify.h
src/volume/archive.h:
include/coffer.h:
src/volume/volume.h:
src/store/store.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
