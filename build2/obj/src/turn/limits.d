build2/obj/src/turn/limits.o: src/turn/limits.c src/turn/turn.h \
 include/coffer.h src/util/util.h
src/turn/turn.h:
include/coffer.h:
src/util/util.h:
