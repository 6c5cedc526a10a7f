build2/obj/src/util/sse.o: src/util/sse.c src/util/sse.h src/util/util.h \
 include/coffer.h
src/util/sse.h:
src/util/util.h:
include/coffer.h:
