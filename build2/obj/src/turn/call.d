build2/obj/src/turn/call.o: src/turn/call.c src/turn/outbox.h \
 include/coffer.h src/turn/turn.h src/util/util.h
src/turn/outbox.h:
include/coffer.h:
src/turn/turn.h:
src/util/util.h:
