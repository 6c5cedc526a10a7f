/*
 * audio.c — audio attached to a prompt, transcribed for the model (API.md
 * "What the model sees: prompt"; seed 001 "Audio is transcribed when it is
 * attached").
 *
 * The kind is told by the first bytes (RIFF/WAVE, fLaC, OggS, an ID3 tag or
 * an MPEG audio frame header) or by an audio/ content type. libsndfile decodes
 * it from memory (sf_open_virtual: WAV, FLAC, Ogg Vorbis/Opus, MP3 and the
 * rest libsndfile reads), mixed to mono and resampled to 16 kHz 16-bit
 * (low-passed first when the rate is higher; linear between neighbours), then PocketSphinx with its US English model
 * turns it into words, utterance by utterance as its voice detector splits
 * them. With --transcriber CMD the 16 kHz WAV goes to CMD on stdin instead and
 * its stdout is the transcript.
 *
 * Bounds (every one named with why when passed): files over 32 MiB or 10
 * minutes are not transcribed (a header's length is believed only to refuse
 * early: the decode counts what it really gets); the decoded samples (at most
 * 10 min x 16,000 x 2 bytes, 19.2 MB) count against media.c's process-wide
 * decode budget; one transcription takes at most 300 s wall time, decode
 * included (a command past it is killed with its process group), and at most
 * two recognisers run at once. A command's transcript is at most 256 KiB.
 *
 * Transcripts are kept in media.c's cache under "audio:SHA256", in memory
 * only. What the content itself decides (damaged, too long, no words) is kept;
 * what the moment decided (out of time, a recogniser missing) is not.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <math.h>
#include <glib.h>
#include <sndfile.h>
#include <pocketsphinx.h>
#include <sphinxbase/feat.h>
#include "agent/agent.h"
#include "agent/media_cache.h"

#define AUDIO_RATE 16000
#define AUDIO_SECONDS_MAX 600
#define AUDIO_TIME_MS (300 * 1000)
#define TRANSCRIPT_MAX (256 << 10)
#define RECOGNISERS 2
#define PS_MODEL "/usr/share/pocketsphinx/model/en-us"
#define READ_SAMPLES 65536 /* a decode chunk, all channels together */

/* ------------------------------------------------------------ the kind */

const char *cof_audio_type(const unsigned char *d, size_t n)
{
	if (n >= 12 && (!memcmp(d, "RIFF", 4) || !memcmp(d, "RF64", 4)) &&
	    !memcmp(d + 8, "WAVE", 4))
		return "audio/wav";
	if (n >= 4 && !memcmp(d, "fLaC", 4))
		return "audio/flac";
	if (n >= 4 && !memcmp(d, "OggS", 4))
		return "audio/ogg";
	if (n >= 3 && !memcmp(d, "ID3", 3))
		return "audio/mpeg";
	/* an MPEG audio frame: 11 sync bits, a version and a layer that exist */
	if (n >= 4 && d[0] == 0xFF && (d[1] & 0xE0) == 0xE0 && (d[1] & 0x18) != 0x08 &&
	    (d[1] & 0x06) != 0 && (d[2] & 0xF0) != 0xF0 && (d[2] & 0x0C) != 0x0C)
		return "audio/mpeg";
	return NULL;
}

/* ------------------------------------------------------------ decoding */

typedef struct vmem {
	const unsigned char *d;
	sf_count_t n, pos;
} vmem;

static sf_count_t vm_len(void *u)
{
	return ((vmem *)u)->n;
}

static sf_count_t vm_seek(sf_count_t off, int whence, void *u)
{
	vmem *m = u;
	sf_count_t p = whence == SEEK_SET ? off : whence == SEEK_CUR ? m->pos + off : m->n + off;

	if (p < 0 || p > m->n)
		return -1;
	return m->pos = p;
}

static sf_count_t vm_read(void *buf, sf_count_t count, void *u)
{
	vmem *m = u;

	if (count < 0)
		return 0;
	if (count > m->n - m->pos)
		count = m->n - m->pos;
	memcpy(buf, m->d + m->pos, (size_t)count);
	m->pos += count;
	return count;
}

static sf_count_t vm_write(const void *buf, sf_count_t count, void *u)
{
	return 0;
}

static sf_count_t vm_tell(void *u)
{
	return ((vmem *)u)->pos;
}

/* The resampler: above 16 kHz a low-pass filter first (a 63-tap
 * Blackman-windowed sinc cutting at 7.6 kHz: nothing folds back under 8 kHz),
 * then for every rate linear interpolation at the output's places, output
 * sample k sitting at source place k * rate / 16000 (integers: exact). */
#define FIR_TAPS 63
typedef struct resampler {
	int64_t rate, j, k;  /* source rate, source samples taken, next output */
	double prev;         /* the previous (filtered) source sample */
	int fir, ri;         /* filtering; the ring's next slot */
	double taps[FIR_TAPS], ring[FIR_TAPS];
	int16_t *out;
	size_t n, cap, max;  /* max: the output's bound, in samples */
} resampler;

static void rs_init(resampler *r, int64_t rate)
{
	double fc = 7600.0 / (double)rate, sum = 0, pi = 3.14159265358979323846;

	memset(r, 0, sizeof *r);
	r->rate = rate;
	r->max = (size_t)AUDIO_SECONDS_MAX * AUDIO_RATE + 1;
	if (rate <= AUDIO_RATE)
		return;
	r->fir = 1;
	for (int i = 0; i < FIR_TAPS; i++) {
		double m = i - (FIR_TAPS - 1) / 2.0, x = 2 * pi * fc * m;
		double w = 0.42 - 0.5 * cos(2 * pi * i / (FIR_TAPS - 1)) +
			   0.08 * cos(4 * pi * i / (FIR_TAPS - 1));
		r->taps[i] = (m == 0 ? 2 * fc : sin(x) / (pi * m)) * w;
		sum += r->taps[i];
	}
	for (int i = 0; i < FIR_TAPS; i++)
		r->taps[i] /= sum;
}

static int16_t clip16(double v)
{
	v *= 32767.0;
	return v > 32767.0 ? 32767 : v < -32768.0 ? -32768 : (int16_t)v;
}

/* 0, or -1 once the output is at its bound. */
static int rs_emit(resampler *r, double v)
{
	if (r->n >= r->max)
		return -1;
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16384;
		if (r->cap > r->max)
			r->cap = r->max;
		r->out = cof_realloc(r->out, r->cap * sizeof *r->out);
	}
	r->out[r->n++] = clip16(v);
	return 0;
}

static int rs_push(resampler *r, double x)
{
	int64_t j = r->j++;

	if (r->fir) {
		double y = 0;
		r->ring[r->ri] = x;
		for (int t = 0, i = r->ri; t < FIR_TAPS; t++, i = i ? i - 1 : FIR_TAPS - 1)
			y += r->taps[t] * r->ring[i];
		r->ri = (r->ri + 1) % FIR_TAPS;
		x = y;
	}
	/* outputs k whose place k * rate / 16000 lies in [j-1, j) */
	if (j == 0) {
		r->prev = x;
		return 0;
	}
	while (r->k * r->rate < j * AUDIO_RATE) {
		double t = (double)(r->k * r->rate - (j - 1) * AUDIO_RATE) / AUDIO_RATE;
		if (rs_emit(r, r->prev + (x - r->prev) * t))
			return -1;
		r->k++;
	}
	r->prev = x;
	return 0;
}

/* The outputs whose places lie in the last source sample's span: held at
 * it (n source samples give ceil(n * 16000 / rate) outputs). */
static int rs_end(resampler *r)
{
	while (r->j > 0 && r->k * r->rate < r->j * AUDIO_RATE) {
		if (rs_emit(r, r->prev))
			return -1;
		r->k++;
	}
	return 0;
}

static void why_set(char *why, size_t whysz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void why_set(char *why, size_t whysz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whysz, fmt, ap);
	va_end(ap);
}

/* libsndfile's words for what it could not read, on one line. */
static void sf_why(SNDFILE *sf, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s", sf_strerror(sf));
	for (char *p = out; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

int cof_audio_decode(const unsigned char *d, size_t n, int64_t deadline, int16_t **pcm,
		     size_t *ns, char *why, size_t whysz)
{
	vmem m = {.d = d, .n = (sf_count_t)n};
	SF_VIRTUAL_IO io = {vm_len, vm_seek, vm_read, vm_write, vm_tell};
	SF_INFO info = {0};
	SNDFILE *sf;
	resampler r = {0};
	float *buf = NULL;
	char e[200];
	int rc = 1;

	*pcm = NULL;
	*ns = 0;
	if (!(sf = sf_open_virtual(&io, SFM_READ, &info, &m))) {
		sf_why(NULL, e, sizeof e);
		why_set(why, whysz, "it cannot be decoded as audio (%s)", e);
		return 1;
	}
	if (info.samplerate < 1 || info.samplerate > 768000 || info.channels < 1 ||
	    info.channels > 1024) {
		why_set(why, whysz, "its header says %d channels at %d Hz, which is not audio "
			"libsndfile can decode", info.channels, info.samplerate);
		goto out;
	}
	if (info.frames != SF_COUNT_MAX &&
	    info.frames > (sf_count_t)AUDIO_SECONDS_MAX * info.samplerate) {
		why_set(why, whysz, "it lasts %lld s; audio over %d minutes is not transcribed",
			(long long)(info.frames / info.samplerate), AUDIO_SECONDS_MAX / 60);
		goto out;
	}
	rs_init(&r, info.samplerate);
	sf_command(sf, SFC_SET_NORM_FLOAT, NULL, SF_TRUE);
	int per = READ_SAMPLES / info.channels;
	if (per < 1)
		per = 1;
	buf = cof_malloc((size_t)per * (size_t)info.channels * sizeof *buf);
	int64_t frames = 0;
	for (;;) {
		sf_count_t got = sf_readf_float(sf, buf, per);
		if (got <= 0)
			break;
		frames += got;
		if (frames > (int64_t)AUDIO_SECONDS_MAX * info.samplerate) {
			why_set(why, whysz, "it lasts over %d minutes; audio over %d minutes is not "
				"transcribed", AUDIO_SECONDS_MAX / 60, AUDIO_SECONDS_MAX / 60);
			goto out;
		}
		for (sf_count_t i = 0; i < got; i++) {
			double v = 0;
			for (int c = 0; c < info.channels; c++) {
				float x = buf[i * info.channels + c];
				v += x == x ? x : 0; /* a NaN sample counts as silence */
			}
			if (rs_push(&r, v / info.channels)) {
				why_set(why, whysz, "it lasts over %d minutes; audio over %d minutes "
					"is not transcribed", AUDIO_SECONDS_MAX / 60,
					AUDIO_SECONDS_MAX / 60);
				goto out;
			}
		}
		if (deadline && cof_mono_ms() > deadline) {
			why_set(why, whysz, "decoding it took over %d s, the time one transcription "
				"may take", AUDIO_TIME_MS / 1000);
			rc = 2;
			goto out;
		}
	}
	if (sf_error(sf)) {
		sf_why(sf, e, sizeof e);
		why_set(why, whysz, "it is damaged: libsndfile stopped after %lld frames (%s)",
			(long long)frames, e);
		goto out;
	}
	if (frames == 0) {
		why_set(why, whysz, "it holds no audio frames");
		goto out;
	}
	rs_end(&r);
	*pcm = r.out;
	*ns = r.n;
	r.out = NULL;
	rc = 0;
out:
	free(buf);
	free(r.out);
	sf_close(sf);
	return rc;
}

/* ------------------------------------------------------------ PocketSphinx */

static pthread_mutex_t ps_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ps_cv;
static pthread_once_t ps_once = PTHREAD_ONCE_INIT;
/* A recogniser and the cepstral mean it started with: its live CMN adapts
 * to what it hears, so it is set back before each file (a transcript
 * depends on the file alone, never on the files before it). */
typedef struct recog {
	ps_decoder_t *ps;
	mfcc_t cmn0[64];
} recog;
static recog ps_pool[RECOGNISERS], *ps_free_list[RECOGNISERS];
static int ps_idle, ps_made;

/* A recogniser, idle or new: NULL with why when none is had by `deadline`. */
static void ps_start(void)
{
	cof_cond_init(&ps_cv); /* its waits measure CLOCK_MONOTONIC */
}

static recog *ps_take(int64_t deadline, char *why, size_t whysz)
{
	ps_decoder_t *ps = NULL;
	recog *r;

	pthread_once(&ps_once, ps_start);
	pthread_mutex_lock(&ps_mu);
	while (!ps_idle && ps_made >= RECOGNISERS)
		if (cof_cond_wait_until(&ps_cv, &ps_mu, deadline) == ETIMEDOUT) {
			pthread_mutex_unlock(&ps_mu);
			why_set(why, whysz, "the speech recognisers stayed busy for %d s",
				AUDIO_TIME_MS / 1000);
			return NULL;
		}
	if (ps_idle) {
		r = ps_free_list[--ps_idle];
		pthread_mutex_unlock(&ps_mu);
		return r;
	}
	/* made under the lock: sphinxbase's logging is process-wide */
	cmd_ln_t *cfg = cmd_ln_init(NULL, ps_args(), TRUE, "-hmm", PS_MODEL "/en-us", "-lm",
				    PS_MODEL "/en-us.lm.bin", "-dict",
				    PS_MODEL "/cmudict-en-us.dict", "-logfn", "/dev/null", NULL);
	ps = cfg ? ps_init(cfg) : NULL;
	if (cfg)
		cmd_ln_free_r(cfg);
	cmn_t *cmn = ps ? ps_get_feat(ps)->cmn_struct : NULL;
	if (ps && (!cmn || cmn->veclen > 64)) {
		ps_free(ps);
		ps = NULL;
	}
	if (!ps) {
		why_set(why, whysz, "the speech recogniser (PocketSphinx with its US English "
			"model, %s) did not start", PS_MODEL);
		pthread_mutex_unlock(&ps_mu);
		return NULL;
	}
	r = &ps_pool[ps_made++];
	r->ps = ps;
	cmn_live_get(cmn, r->cmn0);
	pthread_mutex_unlock(&ps_mu);
	return r;
}

static void ps_give(recog *r)
{
	pthread_mutex_lock(&ps_mu);
	ps_free_list[ps_idle++] = r;
	pthread_cond_signal(&ps_cv);
	pthread_mutex_unlock(&ps_mu);
}

/* The cepstral mean the recogniser would reach by the file's end, set as
 * the mean it starts with: the file's features (its speech frames, as the
 * voice detector keeps them) run once through the live CMN alone, without
 * the search (a fraction of its cost). The model's default starting mean
 * fits no voice in particular: without this a short file's first words,
 * often all of them, are lost. */
static void cmn_of_file(recog *rg, const int16_t *pcm, size_t ns)
{
	fe_t *fe = ps_get_fe(rg->ps);
	cmn_t *cmn = ps_get_feat(rg->ps)->cmn_struct;
	int ncep = fe_get_output_size(fe);
	mfcc_t store[64 * 64], *fr[64];
	const int16 *p = pcm;
	size_t left = ns;
	int32 nf;

	if (ncep < 1 || ncep > 64)
		return;
	for (int i = 0; i < 64; i++)
		fr[i] = store + i * ncep;
	fe_start_stream(fe);
	fe_start_utt(fe);
	while (left > 0) {
		size_t was = left;
		nf = 64;
		if (fe_process_frames(fe, &p, &left, fr, &nf, NULL) < 0)
			break;
		if (nf > 0)
			cmn_live(cmn, fr, FALSE, nf);
		if (left == was && nf == 0)
			break;
	}
	nf = 0;
	fe_end_utt(fe, fr[0], &nf);
	if (nf > 0)
		cmn_live(cmn, fr, FALSE, 1);
	cmn_live_update(cmn);
}

static void hyp_add(ps_decoder_t *ps, cof_buf *text)
{
	const char *h = ps_get_hyp(ps, NULL);

	if (h && *h) {
		if (text->len)
			cof_buf_adds(text, " ");
		cof_buf_adds(text, h);
	}
}

/* 0 words in text; 1 why (the content's); 2 why (the moment's). */
static int recognise(const int16_t *pcm, size_t ns, int64_t deadline, cof_buf *text,
		     char *why, size_t whysz)
{
	recog *rg = ps_take(deadline, why, whysz);
	ps_decoder_t *ps = rg ? rg->ps : NULL;
	int in_utt = 0, rc = 0;

	if (!ps)
		return 2;
	cmn_live_set(ps_get_feat(ps)->cmn_struct, rg->cmn0);
	cmn_of_file(rg, pcm, ns);
	ps_start_stream(ps); /* the voice detector's noise level, anew */
	if (ps_start_utt(ps) < 0) {
		ps_give(rg);
		why_set(why, whysz, "the speech recogniser did not start an utterance");
		return 2;
	}
	for (size_t i = 0; i < ns; i += 4096) {
		size_t k = ns - i < 4096 ? ns - i : 4096;
		if (ps_process_raw(ps, pcm + i, k, FALSE, FALSE) < 0) {
			why_set(why, whysz, "the speech recogniser failed on it");
			rc = 1;
			break;
		}
		int speech = ps_get_in_speech(ps);
		if (speech)
			in_utt = 1;
		if (!speech && in_utt) { /* an utterance ended: its words, then the next */
			ps_end_utt(ps);
			hyp_add(ps, text);
			ps_start_utt(ps);
			in_utt = 0;
		}
		if (cof_mono_ms() > deadline) {
			why_set(why, whysz, "transcribing it took over %d s, the time one "
				"transcription may take", AUDIO_TIME_MS / 1000);
			rc = 2;
			break;
		}
	}
	ps_end_utt(ps);
	if (rc == 0)
		hyp_add(ps, text);
	ps_give(rg);
	return rc;
}

/* ------------------------------------------------------------ --transcriber */

static char *transcriber;

void cof_audio_set_transcriber(const char *cmd)
{
	free(transcriber);
	transcriber = cmd && *cmd ? strdup(cmd) : NULL;
}

/* The samples as a 16 kHz mono 16-bit WAV file (44 bytes of header). */
static unsigned char *wav_of(const int16_t *pcm, size_t ns, size_t *len)
{
	uint32_t data = (uint32_t)(ns * 2);
	unsigned char *w = cof_malloc(44 + (size_t)data);
	unsigned char h[44] = "RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\0\0\0\0\0\0\0\0\x02\0"
			      "\x10\0data";
	uint32_t v[4] = {36 + data, AUDIO_RATE, AUDIO_RATE * 2, data};
	int at[4] = {4, 24, 28, 40};

	for (int i = 0; i < 4; i++)
		for (int b = 0; b < 4; b++)
			h[at[i] + b] = (unsigned char)(v[i] >> (8 * b));
	memcpy(w, h, 44);
	for (size_t i = 0; i < ns; i++) {
		w[44 + 2 * i] = (unsigned char)((uint16_t)pcm[i] & 0xFF);
		w[45 + 2 * i] = (unsigned char)((uint16_t)pcm[i] >> 8);
	}
	*len = 44 + (size_t)data;
	return w;
}

/* Runs the --transcriber command: the WAV on its stdin, its stdout the
 * words. 0, 1 (the content's why: the command said no) or 2 (the moment's). */
static int run_transcriber(const int16_t *pcm, size_t ns, int64_t deadline, cof_buf *text,
			   char *why, size_t whysz)
{
	size_t wlen, wpos = 0;
	unsigned char *wav = wav_of(pcm, ns, &wlen);
	int in[2], out[2] = {-1, -1}, err[2] = {-1, -1}, rc = 2, status = 0;
	char ebuf[512];
	size_t elen = 0;
	pid_t pid;

	/* stdin is a socket: send(MSG_NOSIGNAL) never raises SIGPIPE when the
	 * command does not read it all */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) ||
	    pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		why_set(why, whysz, "the transcriber could not be started: %s", strerror(errno));
		free(wav);
		return 2;
	}
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		dup2(in[1], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		closefrom(3);
		execl("/bin/sh", "sh", "-c", transcriber, (char *)NULL);
		_exit(127);
	}
	close(in[1]);
	close(out[1]);
	close(err[1]);
	if (pid < 0) {
		why_set(why, whysz, "the transcriber could not be started: %s", strerror(errno));
		goto out;
	}
	setpgid(pid, pid); /* as the child does: whichever runs first */
	fcntl(in[0], F_SETFL, O_NONBLOCK);
	shutdown(in[0], SHUT_RD);
	int open_out = 1, open_err = 1, open_in = 1, over = 0;
	while (open_out || open_err) {
		struct pollfd p[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0},
				      {open_in ? in[0] : -1, POLLOUT, 0}};
		int64_t left = deadline - cof_mono_ms();
		if (left <= 0) {
			why_set(why, whysz, "the transcriber (--transcriber) ran over %d s, the "
				"time one transcription may take; it was stopped",
				AUDIO_TIME_MS / 1000);
			kill(-pid, SIGKILL);
			goto reap;
		}
		if (poll(p, 3, left > 1000 ? 1000 : (int)left) < 0 && errno != EINTR)
			break;
		if (p[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
			ssize_t k = send(in[0], wav + wpos, wlen - wpos, MSG_NOSIGNAL);
			if (k > 0)
				wpos += (size_t)k;
			if ((k < 0 && errno != EAGAIN && errno != EINTR) || wpos == wlen) {
				shutdown(in[0], SHUT_WR);
				open_in = 0;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			char b[8192];
			ssize_t k = read(out[0], b, sizeof b);
			if (k > 0 && text->len + (size_t)k > TRANSCRIPT_MAX) {
				over = 1;
				kill(-pid, SIGKILL);
			} else if (k > 0) {
				cof_buf_add(text, b, (size_t)k);
			}
			if (k == 0 || over)
				open_out = 0;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t k = read(err[0], ebuf + elen, sizeof ebuf - 1 - elen);
			if (k > 0)
				elen += (size_t)k;
			if (k == 0 || elen == sizeof ebuf - 1)
				open_err = 0;
		}
	}
	/* its output is closed: it has ended or will soon; past the deadline killed */
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (cof_mono_ms() > deadline) {
			kill(-pid, SIGKILL);
			why_set(why, whysz, "the transcriber (--transcriber) ran over %d s, the time "
				"one transcription may take; it was stopped", AUDIO_TIME_MS / 1000);
			goto reap;
		}
		usleep(10000);
	}
	kill(-pid, SIGKILL); /* what it left running in its group */
	ebuf[elen] = '\0';
	for (char *q = ebuf; *q; q++)
		if (*q == '\n' || *q == '\r' || (unsigned char)*q < 0x20)
			*q = ' ';
	if (over) {
		why_set(why, whysz, "the transcriber (--transcriber) wrote over %d KiB; a "
			"transcript is at most %d KiB", TRANSCRIPT_MAX >> 10, TRANSCRIPT_MAX >> 10);
		rc = 1;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		char st[64];
		if (WIFEXITED(status))
			snprintf(st, sizeof st, "exit status %d", WEXITSTATUS(status));
		else
			snprintf(st, sizeof st, "signal %d", WTERMSIG(status));
		why_set(why, whysz, "the transcriber (--transcriber) failed (%s)%s%.160s", st,
			elen ? ": " : "", ebuf);
		rc = 2;
	} else if (!cof_utf8_valid(text->data ? text->data : "", text->len)) {
		why_set(why, whysz, "the transcriber (--transcriber) wrote text that is not UTF-8");
		rc = 1;
	} else {
		rc = 0;
	}
	goto out;
reap:
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
out:
	close(in[0]);
	close(out[0]);
	close(err[0]);
	free(wav);
	return rc;
}

/* ------------------------------------------------------------ the transcript */

/* Transcribes d into e: e->ok with the words in e->buf, or e->why. Returns
 * whether the outcome is the content's own (kept) or the moment's (not). */
static int transcribe(cof_shown *e, const unsigned char *d, size_t n)
{
	int64_t deadline = cof_mono_ms() + AUDIO_TIME_MS;
	int16_t *pcm;
	size_t ns;
	int64_t need = (int64_t)AUDIO_SECONDS_MAX * AUDIO_RATE * 2;
	cof_buf text = COF_BUF_INIT;
	int r;

	cof_media_budget_take(need);
	r = cof_audio_decode(d, n, deadline, &pcm, &ns, e->why, sizeof e->why);
	if (r == 0) {
		r = transcriber ? run_transcriber(pcm, ns, deadline, &text, e->why, sizeof e->why)
				: recognise(pcm, ns, deadline, &text, e->why, sizeof e->why);
		free(pcm);
	}
	cof_media_budget_give(need);
	if (r == 0) {
		/* trimmed: a command's closing newline is not a word */
		size_t a = 0, z = text.len;
		while (a < z && (text.data[a] == ' ' || text.data[a] == '\n' ||
				 text.data[a] == '\r' || text.data[a] == '\t'))
			a++;
		while (z > a && (text.data[z - 1] == ' ' || text.data[z - 1] == '\n' ||
				 text.data[z - 1] == '\r' || text.data[z - 1] == '\t'))
			z--;
		e->buf = g_malloc(z - a + 1);
		memcpy(e->buf, text.data ? text.data + a : "", z - a);
		e->buf[z - a] = '\0';
		e->len = z - a;
		e->ok = 1;
	}
	cof_buf_release(&text);
	return r != 2;
}

int cof_audio_transcript(const char *sha, const unsigned char *d, size_t n, char **text,
			 char *why, size_t whysz)
{
	char key[80];
	cof_shown *e;

	*text = NULL;
	if ((int64_t)n > COF_AUDIO_BYTES_MAX) {
		why_set(why, whysz, "it is %zu bytes; audio over %d MiB is not transcribed", n,
			(int)(COF_AUDIO_BYTES_MAX >> 20));
		return 0;
	}
	snprintf(key, sizeof key, "audio:%s", sha);
	if (!cof_media_cache_get(key, &e))
		cof_media_cache_done(e, transcribe(e, d, n));
	if (e->ok)
		*text = cof_strdup((const char *)e->buf);
	else
		snprintf(why, whysz, "%s", e->why);
	cof_media_cache_release(e);
	return *text != NULL;
}
