build2/obj/src/turn/confine.o: src/turn/confine.c src/turn/turn.h \
 include/coffer.h src/util/util.h
src/turn/turn.h:
include/coffer.h:
src/util/util.h:
