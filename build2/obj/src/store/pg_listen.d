build2/obj/src/store/pg_listen.o: src/store/pg_listen.c \
 /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/store/pg_listen.h \
 include/coffer.h src/util/util.h
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/store/pg_listen.h:
include/coffer.h:
src/util/util.h:
