build2/obj/src/volume/idem.o: src/volume/idem.c src/volume/volume.h \
 src/store/store.h include/coffer.h src/store/blob.h src/store/meta.h \
 src/util/util.h src/store/notify.h
src/volume/volume.h:
src/store/store.h:
include/coffer.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
