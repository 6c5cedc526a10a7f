build2/obj/src/turn/turns.o: src/turn/turns.c src/store/blob.h \
 include/coffer.h src/turn/outbox.h src/turn/turn.h src/util/util.h
src/store/blob.h:
include/coffer.h:
src/turn/outbox.h:
src/turn/turn.h:
src/util/util.h:
