build2/obj/src/turn/records.o: src/turn/records.c src/store/store.h \
 include/coffer.h src/store/blob.h src/store/meta.h src/util/util.h \
 src/store/notify.h src/turn/turn.h
src/store/store.h:
include/coffer.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
src/turn/turn.h:
