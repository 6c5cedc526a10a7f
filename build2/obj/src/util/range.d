build2/obj/src/util/range.o: src/util/range.c src/util/range.h
src/util/range.h:
