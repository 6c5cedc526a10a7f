build2/obj/src/relay/persist.o: src/relay/persist.c src/relay/relay.h \
 include/coffer.h src/policy/policy.h src/util/util.h src/store/meta.h \
 src/store/store.h src/store/blob.h src/store/notify.h
src/relay/relay.h:
include/coffer.h:
src/policy/policy.h:
src/util/util.h:
src/store/meta.h:
src/store/store.h:
src/store/blob.h:
src/store/notify.h:
