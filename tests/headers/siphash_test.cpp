// siphash.h against published test vectors, and the fixed-length variants the
// data plane uses against the generic function.
//
// Vectors (facts, retyped here as tables):
//  * SipHash-2-4, key 00..0f, message 00..len-1 for len 0..63: the reference
//    table of Aumasson & Bernstein (github.com/veorq/SipHash, vectors.h), as
//    also carried by the Linux kernel's lib/siphash_kunit.c and ccan.
//  * SipHash-1-3 (the data plane's variant), two independent sources:
//    - the Linux kernel's hsiphash vectors for 64-bit (lib/siphash_kunit.c,
//      BITS_PER_LONG == 64): on 64-bit hsiphash *is* SipHash-1-3 with a
//      64-bit key, returned as a u32 (the low half). Key 00..0f.
//    - full 64-bit SipHash-1-3 outputs "obtained with the SIP-1-3 reference
//      implementation from github.com/veorq/SipHash" in OCaml's sip13 hash
//      test, for the keys (0, 0) and (1, 0) (as two little-endian u64 words).
#include "bpf/siphash.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

namespace {

const __u64 kSip24[64] = {
	0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull, 0x85676696d7fb7e2dull,
	0xcf2794e0277187b7ull, 0x18765564cd99a68dull, 0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull,
	0x93f5f5799a932462ull, 0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
	0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull, 0xa129ca6149be45e5ull,
	0x3f2acc7f57c29bdbull, 0x699ae9f52cbe4794ull, 0x4bc1b3f0968dd39cull, 0xbb6dc91da77961bdull,
	0xbed65cf21aa2ee98ull, 0xd0f2cbb02e3b67c7ull, 0x93536795e3a33e88ull, 0xa80c038ccd5ccec8ull,
	0xb8ad50c6f649af94ull, 0xbce192de8a85b8eaull, 0x17d835b85bbb15f3ull, 0x2f2e6163076bcfadull,
	0xde4daaaca71dc9a5ull, 0xa6a2506687956571ull, 0xad87a3535c49ef28ull, 0x32d892fad841c342ull,
	0x7127512f72f27cceull, 0xa7f32346f95978e3ull, 0x12e0b01abb051238ull, 0x15e034d40fa197aeull,
	0x314dffbe0815a3b4ull, 0x027990f029623981ull, 0xcadcd4e59ef40c4dull, 0x9abfd8766a33735cull,
	0x0e3ea96b5304a7d0ull, 0xad0c42d6fc585992ull, 0x187306c89bc215a9ull, 0xd4a60abcf3792b95ull,
	0xf935451de4f21df2ull, 0xa9538f0419755787ull, 0xdb9acddff56ca510ull, 0xd06c98cd5c0975ebull,
	0xe612a3cb9ecba951ull, 0xc766e62cfcadaf96ull, 0xee64435a9752fe72ull, 0xa192d576b245165aull,
	0x0a8787bf8ecb74b2ull, 0x81b3e73d20b49b6full, 0x7fa8220ba3b2eceaull, 0x245731c13ca42499ull,
	0xb78dbfaf3a8d83bdull, 0xea1ad565322a1a0bull, 0x60e61c23a3795013ull, 0x6606d7e446282b93ull,
	0x6ca4ecb15c5f91e1ull, 0x9f626da15c9625f3ull, 0xe51b38608ef25f57ull, 0x958a324ceb064572ull,
};

const __u32 kHsiphash64[64] = {
	0x050fc4dcu, 0x7d57ca93u, 0x4dc7d44du, 0xe7ddf7fbu, 0x88d38328u, 0x49533b67u, 0xc59f22a7u, 0x9bb11140u,
	0x8d299a8eu, 0x6c063de4u, 0x92ff097fu, 0xf94dc352u, 0x57b4d9a2u, 0x1229ffa7u, 0xc0f95d34u, 0x2a519956u,
	0x7d908b66u, 0x63dbd80cu, 0xb473e63eu, 0x8d297d1cu, 0xa6cce040u, 0x2b45f844u, 0xa320872eu, 0xdae6c123u,
	0x67349c8cu, 0x705b0979u, 0xca9913a5u, 0x4ade3b35u, 0xef6cd00du, 0x4ab1e1f4u, 0x43c5e663u, 0x8c21d1bcu,
	0x16a7b60du, 0x7a8ff9bfu, 0x1f2a753eu, 0xbf186b91u, 0xada26206u, 0xa3c33057u, 0xae3a36a1u, 0x7b108392u,
	0x99e41531u, 0x3f1ad944u, 0xc8138825u, 0xc28949a6u, 0xfaf8876bu, 0x9f042196u, 0x68b1d623u, 0x8b5114fdu,
	0xdf074c46u, 0x12cc86b3u, 0x0a52098fu, 0x9d292f9au, 0xa2f41f12u, 0x43a71ed0u, 0x73f0bce6u, 0x70a7e980u,
	0x243c6d75u, 0xfdb71513u, 0xa67d8a08u, 0xb7e8f148u, 0xf7a644eeu, 0x0f1837f2u, 0x4b6694e0u, 0xb7bbb3a8u,
};

const __u64 kSip13Key0[64] = {
	0xd1fba762150c532cull, 0x68a914128e01e473ull, 0x010bac45c41e3669ull, 0x4d4c9a4a8ef6e0adull,
	0x7cc43f98813e4dbdull, 0x5abe2169dff36275ull, 0xe3c25f87624f1cdbull, 0x2f098ab0c751325aull,
	0xead411e67ebe2eeaull, 0x75927f9d95124362ull, 0xaf9f77a65ab51a1dull, 0xfe64ce8b6617fcffull,
	0xa6baf4fb0f9fe1c2ull, 0xa0cf3211850f8e0dull, 0x7f86049379fbfe67ull, 0xf30eb725bb91c9eaull,
	0x8972188433a5c5b7ull, 0x4883c49a2c009c1dull, 0xadc2c0b63044067dull, 0x091f4a3329f87d19ull,
	0x639e355ae68c0100ull, 0xb17bef2cb5213239ull, 0xf8aeb1066236ccfeull, 0x37332b1389daa4ffull,
	0x31185a47af932f3aull, 0xebf352e82ae23e2full, 0xed36ff242fe478b2ull, 0x2454d97d299299dfull,
	0x8cd57fe8130d0ac7ull, 0xbe98eb2faf0a0e85ull, 0xd427c34ee09470c6ull, 0x169739443111d49bull,
	0x31ef8061c910629bull, 0x7fb71d24dfa4c9f6ull, 0x92771f49e836d389ull, 0x3c393cf6f0853bc3ull,
	0xac77921fcc642bd3ull, 0x422a9751192ff266ull, 0xc680ae8a8c584ddfull, 0x6c76b6d34bb6d26bull,
	0x95bc321ab41d8206ull, 0x908a3a97a6d37669ull, 0xfcaf3c64874dd0b4ull, 0xf689479b32b84a44ull,
	0xd857641079efd1fdull, 0x8b581578722633f7ull, 0x83cb09d35ea7bcd4ull, 0x8485f7f5ae725a0dull,
	0xfe1f2445ba50237full, 0x23cece041d7866b0ull, 0x416687480b336c09ull, 0xf15960da7e7f3892ull,
	0xded6177b9826835aull, 0xf80dae51668be6beull, 0x17ecc6ee6647df18ull, 0x5220d642b4a52110ull,
	0xa4f0cf4ba4adc016ull, 0xe5125bb26d1f2976ull, 0x851b0e75f580d256ull, 0x12605250a37e39acull,
	0xd95a713568daebf1ull, 0xcdcf4a42ec0dd605ull, 0xa5c708712b617164ull, 0x385d3e39e5f37359ull,
};

const __u64 kSip13Key1[64] = {
	0xc44a0ebf4e962581ull, 0xc7f8837cdc05230bull, 0xbfeff0bc8a414c08ull, 0xd8c82d87fa4286e4ull,
	0x5d51da6e88a607e0ull, 0x904197b89cffef85ull, 0x5495a918e3423106ull, 0x9ce896d47e204af6ull,
	0x51738227823e2309ull, 0xa9d59ba0fefc9497ull, 0xc56750690b3345efull, 0xdccd724817e07d34ull,
	0x292cdaf7e383c05aull, 0xf1274d8b4ae1246eull, 0x768cb93004a0efa8ull, 0x535280d545ebc696ull,
	0xde2f7768ba893d84ull, 0xa5f1ec80df8761a5ull, 0x1427ef7862a19171ull, 0x655a0dc22d8b90a6ull,
	0xd0c112e9e4038c40ull, 0x24d633ab5ba1b7e9ull, 0x99b06c142bcf8b5full, 0x18feebfcbb0326b3ull,
	0xf5e408152c880545ull, 0x6015f851bac89dc1ull, 0xac33279dc38a017eull, 0x9bc7412bb2eb7394ull,
	0x5ffa8eddba0091e6ull, 0xdffde98f2c745b79ull, 0x78db18c79a12f099ull, 0x446a5b127a38bf2eull,
	0xded378bdce3e8ed5ull, 0xfcca56c93ac0918cull, 0x5b39d7994e4f784cull, 0x1a0a1f9156633641ull,
	0x5d8abd3827b86fcbull, 0xf13609be742294abull, 0x577add0b75d2c331ull, 0xbfde1b9768516babull,
	0x5f4ed25d19cdcd56ull, 0x0f1b601b270258d7ull, 0xb026423c6c066fbcull, 0xc1876b1f6b36efb7ull,
	0x570442373a1298bdull, 0x1d320e1f7e5bbe92ull, 0x527dc0ab084853dfull, 0x6ef49aecf842b256ull,
	0x196e65e9df13f340ull, 0x3163970e2c2a3cecull, 0xc5e84ae1e8e70d1cull, 0x12c3d0a742f81cb5ull,
	0xec779699cfb6dc88ull, 0x1390ce0e757826d4ull, 0xcffe7f1d95d46cdbull, 0x81739547885752ffull,
	0x399b320e8f24805full, 0xc01aee30b0649549ull, 0xfd6325afbed1d417ull, 0xbdc54acabc306afdull,
	0x019a4b0f98334c46ull, 0xba1a669aaa372afdull, 0x828e134835b63734ull, 0xa35bf11b84b78be0ull,
};

// Key 00 01 .. 0f as two little-endian words.
const __u64 kKey0f[2] = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};

std::array<unsigned char, 64> counting_bytes()
{
	std::array<unsigned char, 64> m{};
	for (int i = 0; i < 64; i++)
		m[i] = (unsigned char)i;
	return m;
}

__u64 le64(const unsigned char *p)
{
	__u64 v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

__u32 le32(const unsigned char *p)
{
	return (__u32)p[0] | (__u32)p[1] << 8 | (__u32)p[2] << 16 | (__u32)p[3] << 24;
}

TEST(SipHash, Generic24MatchesAllReferenceVectors)
{
	const auto m = counting_bytes();
	for (unsigned long len = 0; len < 64; len++)
		EXPECT_EQ(sluice_siphash_bytes(kKey0f, m.data(), len, 2, 4), kSip24[len])
			<< "length " << len;
	// The two anchors quoted in the SipHash paper and elsewhere.
	EXPECT_EQ(sluice_siphash_bytes(kKey0f, m.data(), 0, 2, 4), 0x726fdb47dd0e0e31ull);
	EXPECT_EQ(sluice_siphash_bytes(kKey0f, m.data(), 15, 2, 4), 0xa129ca6149be45e5ull);
}

TEST(SipHash, Generic13MatchesTheKernelsHsiphash64Vectors)
{
	const auto m = counting_bytes();
	for (unsigned long len = 0; len < 64; len++)
		EXPECT_EQ((__u32)sluice_siphash_bytes(kKey0f, m.data(), len, 1, 3), kHsiphash64[len])
			<< "length " << len;
}

TEST(SipHash, Generic13MatchesFull64BitReferenceOutputs)
{
	const auto m = counting_bytes();
	const __u64 key0[2] = {0, 0}, key1[2] = {1, 0};
	for (unsigned long len = 0; len < 64; len++) {
		EXPECT_EQ(sluice_siphash_bytes(key0, m.data(), len, 1, 3), kSip13Key0[len])
			<< "key (0, 0), length " << len;
		EXPECT_EQ(sluice_siphash_bytes(key1, m.data(), len, 1, 3), kSip13Key1[len])
			<< "key (1, 0), length " << len;
	}
}

// The data plane's fixed-length variants on the vector inputs: 4 bytes
// (IPv4) and 16 bytes (IPv6), both round counts.
TEST(SipHash, FixedLengthVariantsMatchTheVectors)
{
	const auto m = counting_bytes();
	const __u32 w4 = le32(m.data());
	const __u64 w0 = le64(m.data()), w1 = le64(m.data() + 8);
	EXPECT_EQ(w4, 0x03020100u);
	EXPECT_EQ(w0, 0x0706050403020100ull);

	EXPECT_EQ(sluice_siphash_4(kKey0f, w4, 2, 4), kSip24[4]);
	EXPECT_EQ(sluice_siphash_16(kKey0f, w0, w1, 2, 4), kSip24[16]);
	EXPECT_EQ((__u32)sluice_siphash_4(kKey0f, w4, 1, 3), kHsiphash64[4]);
	EXPECT_EQ((__u32)sluice_siphash_16(kKey0f, w0, w1, 1, 3), kHsiphash64[16]);
	const __u64 key0[2] = {0, 0}, key1[2] = {1, 0};
	EXPECT_EQ(sluice_siphash_4(key0, w4, 1, 3), kSip13Key0[4]);
	EXPECT_EQ(sluice_siphash_16(key0, w0, w1, 1, 3), kSip13Key0[16]);
	EXPECT_EQ(sluice_siphash_4(key1, w4, 1, 3), kSip13Key1[4]);
	EXPECT_EQ(sluice_siphash_16(key1, w0, w1, 1, 3), kSip13Key1[16]);
	// And the data plane's configured rounds are the 1-3 just verified.
	EXPECT_EQ(SLUICE_SIPHASH_C, 1);
	EXPECT_EQ(SLUICE_SIPHASH_D, 3);
}

TEST(SipHash, FixedLengthVariantsEqualGenericOnRandomInputs)
{
	std::mt19937_64 rng(1234);
	for (auto [c, d] : std::initializer_list<std::pair<int, int>>{
		     {2, 4}, {1, 3}, {SLUICE_SIPHASH_C, SLUICE_SIPHASH_D}}) {
		for (int i = 0; i < 20000; i++) {
			const __u64 key[2] = {rng(), rng()};
			unsigned char bytes[16];
			const __u64 w0 = rng(), w1 = rng();
			std::memcpy(bytes, &w0, 8); // little-endian host (parse.h insists)
			std::memcpy(bytes + 8, &w1, 8);
			ASSERT_EQ(sluice_siphash_16(key, w0, w1, c, d),
				  sluice_siphash_bytes(key, bytes, 16, c, d))
				<< c << "-" << d << " iteration " << i;
			ASSERT_EQ(sluice_siphash_4(key, (__u32)w0, c, d),
				  sluice_siphash_bytes(key, bytes, 4, c, d))
				<< c << "-" << d << " iteration " << i;
		}
	}
}

// A keyed hash: every bit of the key and every bit of the input matters, and
// the 4- and 16-byte hashes of the same leading bytes differ (the length is
// mixed in, so IPv4 and IPv6 never share a hash input).
TEST(SipHash, EveryKeyAndInputBitChangesTheHash)
{
	const __u64 key[2] = {0x0123456789abcdefull, 0xfedcba9876543210ull};
	const __u64 w0 = 0x00000000a0b0c0d0ull, w1 = 0;
	const __u64 h16 = sluice_siphash_16(key, w0, w1, 1, 3);
	const __u64 h4 = sluice_siphash_4(key, (__u32)w0, 1, 3);
	EXPECT_NE(h16, h4);
	for (int bit = 0; bit < 128; bit++) {
		__u64 k2[2] = {key[0], key[1]};
		k2[bit / 64] ^= 1ull << (bit % 64);
		EXPECT_NE(sluice_siphash_16(k2, w0, w1, 1, 3), h16) << "key bit " << bit;
		EXPECT_NE(sluice_siphash_4(k2, (__u32)w0, 1, 3), h4) << "key bit " << bit;
		const __u64 x0 = bit < 64 ? w0 ^ (1ull << bit) : w0;
		const __u64 x1 = bit < 64 ? w1 : w1 ^ (1ull << (bit - 64));
		EXPECT_NE(sluice_siphash_16(key, x0, x1, 1, 3), h16) << "input bit " << bit;
		if (bit < 32) {
			EXPECT_NE(sluice_siphash_4(key, (__u32)w0 ^ (1u << bit), 1, 3), h4)
				<< "input bit " << bit;
		}
	}
}

// The avalanche a slot index relies on: flipping one input bit flips about
// half of the output bits (here: on average within 32 +- 1.5 over many trials).
TEST(SipHash, OneInputBitFlipsAboutHalfTheOutput)
{
	std::mt19937_64 rng(77);
	double flipped = 0;
	int trials = 0;
	for (int i = 0; i < 2000; i++) {
		const __u64 key[2] = {rng(), rng()};
		const __u64 w0 = rng(), w1 = rng();
		const __u64 h = sluice_siphash_16(key, w0, w1, 1, 3);
		const int bit = (int)(rng() % 128);
		const __u64 x0 = bit < 64 ? w0 ^ (1ull << bit) : w0;
		const __u64 x1 = bit < 64 ? w1 : w1 ^ (1ull << (bit - 64));
		flipped += __builtin_popcountll(h ^ sluice_siphash_16(key, x0, x1, 1, 3));
		trials++;
	}
	EXPECT_NEAR(flipped / trials, 32.0, 1.5);
}

}  // namespace
