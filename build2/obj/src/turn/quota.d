build2/obj/src/turn/quota.o: src/turn/quota.c src/turn/turn.h \
 include/coffer.h src/util/util.h
src/turn/turn.h:
include/coffer.h:
src/util/util.h:
