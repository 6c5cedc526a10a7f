build2/obj/src/policy/names.o: src/policy/names.c src/policy/policy.h \
 include/coffer.h
src/policy/policy.h:
include/coffer.h:
