build2/obj/src/http/forward.o: src/http/forward.c src/http/http.h \
 include/coffer.h src/util/util.h src/store/store.h src/store/blob.h \
 src/store/meta.h src/store/notify.h
src/http/http.h:
include/coffer.h:
src/util/util.h:
src/store/store.h:
src/store/blob.h:
src/store/meta.h:
src/store/notify.h:
