build2/obj/src/cofferd.o: src/cofferd.c src/http/server.h
src/http/server.h:
