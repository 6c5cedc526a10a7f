build2/obj/src/policy/protected.o: src/policy/protected.c \
 src/policy/policy.h include/coffer.h src/util/util.h
src/policy/policy.h:
include/coffer.h:
src/util/util.h:
