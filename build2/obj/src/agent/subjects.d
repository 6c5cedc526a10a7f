build2/obj/src/agent/subjects.o: src/agent/subjects.c src/agent/agent.h \
 src/volume/volume.h src/store/store.h include/coffer.h src/store/blob.h \
 src/store/meta.h src/util/util.h src/store/notify.h src/policy/policy.h
src/agent/agent.h:
src/volume/volume.h:
src/store/store.h:
include/coffer.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
src/policy/policy.h:
