build2/obj/src/agent/agent.o: src/agent/agent.c src/agent/agent.h \
 src/volume/volume.h src/store/store.h include/coffer.h src/store/blob.h \
 src/store/meta.h src/util/util.h src/store/notify.h src/policy/policy.h \
 src/turn/outbox.h src/turn/turn.h
src/agent/agent.h:
src/volume/volume.h:
src/store/store.h:
include/coffer.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
src/policy/policy.h:
src/turn/outbox.h:
src/turn/turn.h:
