build2/obj/src/store/notify_pg.o: src/store/notify_pg.c \
 /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/store/notify.h \
 include/coffer.h src/store/pg_listen.h src/util/util.h
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/store/notify.h:
include/coffer.h:
src/store/pg_listen.h:
src/util/util.h:
