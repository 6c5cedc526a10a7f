build2/obj/src/turn/outbox.o: src/turn/outbox.c src/turn/outbox.h \
 include/coffer.h src/util/util.h
src/turn/outbox.h:
include/coffer.h:
src/util/util.h:
