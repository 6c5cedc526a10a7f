build2/obj/src/policy/normalize.o: src/policy/normalize.c \
 src/policy/normalize.h src/util/util.h include/coffer.h
src/policy/normalize.h:
src/util/util.h:
include/coffer.h:
