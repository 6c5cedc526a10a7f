build2/obj/src/store/lock.o: src/store/lock.c src/store/store.h \
 include/coffer.h src/store/blob.h src/store/meta.h src/util/util.h \
 src/store/notify.h
src/store/store.h:
include/coffer.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
