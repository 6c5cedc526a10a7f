build2/obj/src/policy/exclude.o: src/policy/exclude.c src/policy/policy.h \
 include/coffer.h src/util/util.h
src/policy/policy.h:
include/coffer.h:
src/util/util.h:
