build2/obj/src/store/store.o: src/store/store.c src/store/store.h \
 include/coffer.h src/store/blob.h src/store/meta.h src/util/util.h \
 src/store/notify.h
src/store/store.h:
include/coffer.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
