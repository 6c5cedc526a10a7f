build2/obj/src/volume/list.o: src/volume/list.c src/volume/volume.h \
 src/store/store.h include/coffer.h src/store/blob.h src/store/meta.h \
 src/util/util.h src/store/notify.h
src/volume/volume.h:
src/store/store.h:
include/coffer.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
