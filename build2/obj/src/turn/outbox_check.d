build2/obj/src/turn/outbox_check.o: src/turn/outbox_check.c \
 src/turn/outbox.h include/coffer.h src/util/util.h
src/turn/outbox.h:
include/coffer.h:
src/util/util.h:
