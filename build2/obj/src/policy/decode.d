build2/obj/src/policy/decode.o: src/policy/decode.c \
 src/policy/normalize.h src/util/util.h include/coffer.h
src/policy/normalize.h:
src/util/util.h:
include/coffer.h:
