build2/obj/src/policy/limits.o: src/policy/limits.c src/policy/policy.h \
 include/coffer.h src/util/util.h
src/policy/policy.h:
include/coffer.h:
src/util/util.h:
