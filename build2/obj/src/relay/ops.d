build2/obj/src/relay/ops.o: src/relay/ops.c src/relay/relay.h \
 include/coffer.h src/policy/policy.h src/util/util.h src/store/meta.h
src/relay/relay.h:
include/coffer.h:
src/policy/policy.h:
src/util/util.h:
src/store/meta.h:
