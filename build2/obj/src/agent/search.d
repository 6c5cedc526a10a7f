build2/obj/src/agent/search.o: src/agent/search.c src/util/regex.h \
 include/coffer.h src/agent/agent.h src/volume/volume.h src/store/store.h \
 src/store/blob.h src/store/meta.h src/util/util.h src/store/notify.h \
 src/policy/policy.h
src/util/regex.h:
include/coffer.h:
src/agent/agent.h:
src/volume/volume.h:
src/store/store.h:
src/store/blob.h:
src/store/meta.h:
src/util/util.h:
src/store/notify.h:
src/policy/policy.h:
