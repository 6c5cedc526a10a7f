build2/obj/src/policy/guard.o: src/policy/guard.c src/policy/normalize.h \
 src/policy/policy.h include/coffer.h src/util/util.h \
 build2/gen/guard_rules.inc
src/policy/normalize.h:
src/policy/policy.h:
include/coffer.h:
src/util/util.h:
build2/gen/guard_rules.inc:
