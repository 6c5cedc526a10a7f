build2/obj/src/store/meta_pg_write.o: src/store/meta_pg_write.c \
 src/store/meta_pg.h /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h src/store/meta.h \
 include/coffer.h src/util/util.h src/store/notify.h
src/store/meta_pg.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
src/store/meta.h:
include/coffer.h:
src/util/util.h:
src/store/notify.h:
