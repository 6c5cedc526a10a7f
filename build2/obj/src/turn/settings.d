build2/obj/src/turn/settings.o: src/turn/settings.c src/turn/turn.h \
 include/coffer.h src/util/util.h
src/turn/turn.h:
include/coffer.h:
src/util/util.h:
