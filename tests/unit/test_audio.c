/*
 * test_audio.c — cof_audio_decode's resampling to 16 kHz mono (audio.c):
 * the number of samples (ceil(n x 16000 / rate)), a tone's level and
 * frequency kept from 8, 16, 22.05 and 48 kHz, channels averaged, a tone
 * above 8 kHz at 48 kHz filtered out instead of folding back under 8 kHz,
 * the 10-minute bound from the header, and the kind told by the first bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "agent/agent.h"

/* A 16-bit PCM WAV of `frames` frames, `ch` channels: channel c of frame i
 * is f(i, c) (in -1..1). */
static unsigned char *wav(int rate, int ch, int frames, double (*f)(int, int, int),
			  size_t *len)
{
	uint32_t data = (uint32_t)frames * ch * 2;
	unsigned char *w = malloc(44 + data);
	uint32_t v;
	uint16_t s;

	memcpy(w, "RIFF", 4);
	v = 36 + data;
	memcpy(w + 4, &v, 4);
	memcpy(w + 8, "WAVEfmt ", 8);
	v = 16;
	memcpy(w + 16, &v, 4);
	s = 1;
	memcpy(w + 20, &s, 2);
	s = (uint16_t)ch;
	memcpy(w + 22, &s, 2);
	v = (uint32_t)rate;
	memcpy(w + 24, &v, 4);
	v = (uint32_t)rate * ch * 2;
	memcpy(w + 28, &v, 4);
	s = (uint16_t)(ch * 2);
	memcpy(w + 32, &s, 2);
	s = 16;
	memcpy(w + 34, &s, 2);
	memcpy(w + 36, "data", 4);
	memcpy(w + 40, &data, 4);
	for (int i = 0; i < frames; i++)
		for (int c = 0; c < ch; c++) {
			int16_t x = (int16_t)lrint(f(i, c, rate) * 32767.0);
			memcpy(w + 44 + ((size_t)i * ch + c) * 2, &x, 2);
		}
	*len = 44 + data;
	return w;
}

static double tone_hz;

static double tone(int i, int c, int rate)
{
	return 0.5 * sin(2 * M_PI * tone_hz * i / rate);
}

/* left a tone, right silent: the mix is the tone at half its level */
static double left_only(int i, int c, int rate)
{
	return c == 0 ? tone(i, c, rate) : 0;
}

/* The level (RMS) of the samples, skipping the filter's first and last 64. */
static double rms(const int16_t *p, size_t n)
{
	double s = 0;
	size_t k = 0;

	for (size_t i = 64; i + 64 < n; i++, k++)
		s += ((double)p[i] / 32767.0) * ((double)p[i] / 32767.0);
	return k ? sqrt(s / (double)k) : 0;
}

/* Zero crossings a second: twice the frequency. */
static double freq(const int16_t *p, size_t n)
{
	int z = 0;

	for (size_t i = 65; i + 64 < n; i++)
		if ((p[i - 1] < 0) != (p[i] < 0))
			z++;
	return z / 2.0 / ((double)(n - 129) / 16000.0);
}

static void decode_ok(int rate, int ch, int frames, double (*f)(int, int, int), int16_t **pcm,
		      size_t *ns)
{
	size_t len;
	char why[256] = "";
	unsigned char *w = wav(rate, ch, frames, f, &len);

	assert_int_equal(cof_audio_decode(w, len, 0, pcm, ns, why, sizeof why), 0);
	free(w);
}

static void test_rates_keep_a_tone(void **state)
{
	int rates[] = {8000, 16000, 22050, 48000};

	for (size_t r = 0; r < sizeof rates / sizeof *rates; r++) {
		int16_t *pcm;
		size_t ns;
		tone_hz = 440;
		decode_ok(rates[r], 1, rates[r], tone, &pcm, &ns); /* 1 s */
		assert_int_equal(ns, 16000);
		double lv = rms(pcm, ns), hz = freq(pcm, ns);
		if (fabs(lv - 0.5 / sqrt(2)) > 0.02 || fabs(hz - 440) > 5)
			fail_msg("%d Hz: level %.3f (want 0.354), %.1f Hz (want 440)", rates[r], lv,
				 hz);
		free(pcm);
	}
}

static void test_counts_round_up(void **state)
{
	int16_t *pcm;
	size_t ns;

	tone_hz = 100;
	decode_ok(44100, 1, 1000, tone, &pcm, &ns); /* 1000 x 16000 / 44100 = 362.8 */
	assert_int_equal(ns, 363);
	free(pcm);
	decode_ok(11025, 1, 7, tone, &pcm, &ns); /* 10.2 */
	assert_int_equal(ns, 11);
	free(pcm);
}

static void test_channels_averaged(void **state)
{
	int16_t *pcm;
	size_t ns;

	tone_hz = 440;
	decode_ok(16000, 2, 16000, left_only, &pcm, &ns);
	assert_int_equal(ns, 16000);
	assert_true(fabs(rms(pcm, ns) - 0.25 / sqrt(2)) < 0.01);
	free(pcm);
}

static void test_no_folding_from_48k(void **state)
{
	int16_t *pcm;
	size_t ns;

	/* 12 kHz would fold to 4 kHz without the low-pass */
	tone_hz = 12000;
	decode_ok(48000, 1, 48000, tone, &pcm, &ns);
	double lv = rms(pcm, ns);
	if (lv > 0.354 / 100) /* 40 dB down at least */
		fail_msg("a 12 kHz tone at 48 kHz came out at level %.4f", lv);
	free(pcm);
}

static void test_ten_minutes_from_the_header(void **state)
{
	size_t len;
	int16_t *pcm = NULL;
	size_t ns = 0;
	char why[256] = "";
	unsigned char *w;

	tone_hz = 1;
	w = wav(100, 1, 100 * 601, tone, &len);
	assert_int_equal(cof_audio_decode(w, len, 0, &pcm, &ns, why, sizeof why), 1);
	assert_non_null(strstr(why, "601 s"));
	assert_null(pcm);
	free(w);
	w = wav(100, 1, 100 * 600, tone, &len);
	assert_int_equal(cof_audio_decode(w, len, 0, &pcm, &ns, why, sizeof why), 0);
	assert_int_equal(ns, 600 * 16000);
	free(pcm);
	free(w);
}

static void test_kinds(void **state)
{
	assert_string_equal(cof_audio_type((const unsigned char *)"RIFF\0\0\0\0WAVE", 12),
			    "audio/wav");
	assert_string_equal(cof_audio_type((const unsigned char *)"fLaC", 4), "audio/flac");
	assert_string_equal(cof_audio_type((const unsigned char *)"OggS", 4), "audio/ogg");
	assert_string_equal(cof_audio_type((const unsigned char *)"ID3\3", 4), "audio/mpeg");
	assert_string_equal(cof_audio_type((const unsigned char *)"\xff\xfb\x90\x00", 4),
			    "audio/mpeg");
	assert_null(cof_audio_type((const unsigned char *)"\xff\xd8\xff\xe0", 4)); /* JPEG */
	assert_null(cof_audio_type((const unsigned char *)"RIFF\0\0\0\0WEBP", 12));
	assert_null(cof_audio_type((const unsigned char *)"OggS", 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rates_keep_a_tone),
		cmocka_unit_test(test_counts_round_up),
		cmocka_unit_test(test_channels_averaged),
		cmocka_unit_test(test_no_folding_from_48k),
		cmocka_unit_test(test_ten_minutes_from_the_header),
		cmocka_unit_test(test_kinds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
