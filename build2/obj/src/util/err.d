build2/obj/src/util/err.o: src/util/err.c include/coffer.h
include/coffer.h:
