//! Known-answer tests pasted from the RFCs (data only).
//!
//! - RFC 9380 Appendix K.1: expand_message_xmd with SHA-256 (DST
//!   `QUUX-V01-CS02-with-expander-SHA256-128`, and the same with the 256-byte
//!   `-long-DST-111…` suffix that exercises §5.3.3), outputs of 32 and 128 bytes.
//! - RFC 9380 Appendix K.3: expand_message_xmd with SHA-512
//!   (`QUUX-V01-CS02-with-expander-SHA512-256`), 32 and 128 bytes.
//! - RFC 9380 Appendix J.1.1: P256_XMD:SHA-256_SSWU_RO_, the output point (x, y).
//! - RFC 9496 Appendix A.3: ristretto255 one-way map from 64-byte inputs, plus the four
//!   non-canonical-input edge cases of the same map from the reference test suite, and
//!   the Appendix A.2 invalid encodings that decode must reject.
//!
//! The RFCs' long messages are `"q128_"` followed by 128 `q` and `"a512_"` followed by
//! 512 `a`; they are built with `repeat` rather than pasted.

use p256::elliptic_curve::sec1::ToSec1Point;
use privset_crypto::group::p256::P256;
use privset_crypto::group::ristretto::Ristretto255;
use privset_crypto::group::xmd::expand_message_xmd;
use privset_crypto::group::{GroupError, PrimeGroup};
use sha2::{Sha256, Sha512};

#[derive(Clone, Copy)]
enum Msg {
    Lit(&'static [u8]),
    Q128,
    A512,
}

impl Msg {
    fn bytes(self) -> Vec<u8> {
        match self {
            Msg::Lit(m) => m.to_vec(),
            Msg::Q128 => format!("q128_{}", "q".repeat(128)).into_bytes(),
            Msg::A512 => format!("a512_{}", "a".repeat(512)).into_bytes(),
        }
    }
}

const DST_SHA256: &[u8] = b"QUUX-V01-CS02-with-expander-SHA256-128";
const DST_SHA512: &[u8] = b"QUUX-V01-CS02-with-expander-SHA512-256";

/// The K.1 long DST: the short one, `-long-DST-`, then `1` up to 256 bytes in total.
fn long_dst() -> Vec<u8> {
    let mut d = b"QUUX-V01-CS02-with-expander-SHA256-128-long-DST-".to_vec();
    d.resize(256, b'1');
    d
}

// RFC 9380 K.1, len_in_bytes = 0x20
const K1_32: &[(Msg, &str)] = &[
    (
        Msg::Lit(b""),
        "68a985b87eb6b46952128911f2a4412bbc302a9d759667f87f7a21d803f07235",
    ),
    (
        Msg::Lit(b"abc"),
        "d8ccab23b5985ccea865c6c97b6e5b8350e794e603b4b97902f53a8a0d605615",
    ),
    (
        Msg::Lit(b"abcdef0123456789"),
        "eff31487c770a893cfb36f912fbfcbff40d5661771ca4b2cb4eafe524333f5c1",
    ),
    (
        Msg::Q128,
        "b23a1d2b4d97b2ef7785562a7e8bac7eed54ed6e97e29aa51bfe3f12ddad1ff9",
    ),
    (
        Msg::A512,
        "4623227bcc01293b8c130bf771da8c298dede7383243dc0993d2d94823958c4c",
    ),
];

// RFC 9380 K.1, len_in_bytes = 0x80
const K1_128: &[(Msg, &str)] = &[
    (
        Msg::Lit(b""),
        concat!(
            "af84c27ccfd45d41914fdff5df25293e221afc53d8ad2ac06d5e3e29485dadbe",
            "e0d121587713a3e0dd4d5e69e93eb7cd4f5df4cd103e188cf60cb02edc3edf18",
            "eda8576c412b18ffb658e3dd6ec849469b979d444cf7b26911a08e63cf31f9dc",
            "c541708d3491184472c2c29bb749d4286b004ceb5ee6b9a7fa5b646c993f0ced",
        ),
    ),
    (
        Msg::Lit(b"abc"),
        concat!(
            "abba86a6129e366fc877aab32fc4ffc70120d8996c88aee2fe4b32d6c7b6437a",
            "647e6c3163d40b76a73cf6a5674ef1d890f95b664ee0afa5359a5c4e07985635",
            "bbecbac65d747d3d2da7ec2b8221b17b0ca9dc8a1ac1c07ea6a1e60583e2cb00",
            "058e77b7b72a298425cd1b941ad4ec65e8afc50303a22c0f99b0509b4c895f40",
        ),
    ),
    (
        Msg::Lit(b"abcdef0123456789"),
        concat!(
            "ef904a29bffc4cf9ee82832451c946ac3c8f8058ae97d8d629831a74c6572bd9",
            "ebd0df635cd1f208e2038e760c4994984ce73f0d55ea9f22af83ba4734569d4b",
            "c95e18350f740c07eef653cbb9f87910d833751825f0ebefa1abe5420bb52be1",
            "4cf489b37fe1a72f7de2d10be453b2c9d9eb20c7e3f6edc5a60629178d9478df",
        ),
    ),
    (
        Msg::Q128,
        concat!(
            "80be107d0884f0d881bb460322f0443d38bd222db8bd0b0a5312a6fedb49c1bb",
            "d88fd75d8b9a09486c60123dfa1d73c1cc3169761b17476d3c6b7cbbd727acd0",
            "e2c942f4dd96ae3da5de368d26b32286e32de7e5a8cb2949f866a0b80c58116b",
            "29fa7fabb3ea7d520ee603e0c25bcaf0b9a5e92ec6a1fe4e0391d1cdbce8c68a",
        ),
    ),
    (
        Msg::A512,
        concat!(
            "546aff5444b5b79aa6148bd81728704c32decb73a3ba76e9e75885cad9def1d0",
            "6d6792f8a7d12794e90efed817d96920d728896a4510864370c207f99bd4a608",
            "ea121700ef01ed879745ee3e4ceef777eda6d9e5e38b90c86ea6fb0b36504ba4",
            "a45d22e86f6db5dd43d98a294bebb9125d5b794e9d2a81181066eb954966a487",
        ),
    ),
];

// RFC 9380 K.1 (long DST), len_in_bytes = 0x20
const K1_LONG_32: &[(Msg, &str)] = &[
    (
        Msg::Lit(b""),
        "e8dc0c8b686b7ef2074086fbdd2f30e3f8bfbd3bdf177f73f04b97ce618a3ed3",
    ),
    (
        Msg::Lit(b"abc"),
        "52dbf4f36cf560fca57dedec2ad924ee9c266341d8f3d6afe5171733b16bbb12",
    ),
    (
        Msg::Lit(b"abcdef0123456789"),
        "35387dcf22618f3728e6c686490f8b431f76550b0b2c61cbc1ce7001536f4521",
    ),
    (
        Msg::Q128,
        "01b637612bb18e840028be900a833a74414140dde0c4754c198532c3a0ba42bc",
    ),
    (
        Msg::A512,
        "20cce7033cabc5460743180be6fa8aac5a103f56d481cf369a8accc0c374431b",
    ),
];

// RFC 9380 K.1 (long DST), len_in_bytes = 0x80
const K1_LONG_128: &[(Msg, &str)] = &[
    (
        Msg::Lit(b""),
        concat!(
            "14604d85432c68b757e485c8894db3117992fc57e0e136f71ad987f789a0abc2",
            "87c47876978e2388a02af86b1e8d1342e5ce4f7aaa07a87321e691f6fba7e007",
            "2eecc1218aebb89fb14a0662322d5edbd873f0eb35260145cd4e64f748c5dfe6",
            "0567e126604bcab1a3ee2dc0778102ae8a5cfd1429ebc0fa6bf1a53c36f55dfc",
        ),
    ),
    (
        Msg::Lit(b"abc"),
        concat!(
            "1a30a5e36fbdb87077552b9d18b9f0aee16e80181d5b951d0471d55b66684914",
            "aef87dbb3626eaabf5ded8cd0686567e503853e5c84c259ba0efc37f71c839da",
            "2129fe81afdaec7fbdc0ccd4c794727a17c0d20ff0ea55e1389d6982d1241cb8",
            "d165762dbc39fb0cee4474d2cbbd468a835ae5b2f20e4f959f56ab24cd6fe267",
        ),
    ),
    (
        Msg::Lit(b"abcdef0123456789"),
        concat!(
            "d2ecef3635d2397f34a9f86438d772db19ffe9924e28a1caf6f1c8f15603d402",
            "8f40891044e5c7e39ebb9b31339979ff33a4249206f67d4a1e7c765410bcd249",
            "ad78d407e303675918f20f26ce6d7027ed3774512ef5b00d816e51bfcc96c353",
            "9601fa48ef1c07e494bdc37054ba96ecb9dbd666417e3de289d4f424f502a982",
        ),
    ),
    (
        Msg::Q128,
        concat!(
            "ed6e8c036df90111410431431a232d41a32c86e296c05d426e5f44e75b9a50d3",
            "35b2412bc6c91e0a6dc131de09c43110d9180d0a70f0d6289cb4e43b05f7ee5e",
            "9b3f42a1fad0f31bac6a625b3b5c50e3a83316783b649e5ecc9d3b1d9471cb50",
            "24b7ccf40d41d1751a04ca0356548bc6e703fca02ab521b505e8e45600508d32",
        ),
    ),
    (
        Msg::A512,
        concat!(
            "78b53f2413f3c688f07732c10e5ced29a17c6a16f717179ffbe38d92d6c9ec29",
            "6502eb9889af83a1928cd162e845b0d3c5424e83280fed3d10cffb2f8431f14e",
            "7a23f4c68819d40617589e4c41169d0b56e0e3535be1fd71fbb08bb70c5b5ffe",
            "d953d6c14bf7618b35fc1f4c4b30538236b4b08c9fbf90462447a8ada60be495",
        ),
    ),
];

// RFC 9380 K.3, len_in_bytes = 0x20
const K3_32: &[(Msg, &str)] = &[
    (
        Msg::Lit(b""),
        "6b9a7312411d92f921c6f68ca0b6380730a1a4d982c507211a90964c394179ba",
    ),
    (
        Msg::Lit(b"abc"),
        "0da749f12fbe5483eb066a5f595055679b976e93abe9be6f0f6318bce7aca8dc",
    ),
    (
        Msg::Lit(b"abcdef0123456789"),
        "087e45a86e2939ee8b91100af1583c4938e0f5fc6c9db4b107b83346bc967f58",
    ),
    (
        Msg::Q128,
        "7336234ee9983902440f6bc35b348352013becd88938d2afec44311caf8356b3",
    ),
    (
        Msg::A512,
        "57b5f7e766d5be68a6bfe1768e3c2b7f1228b3e4b3134956dd73a59b954c66f4",
    ),
];

// RFC 9380 K.3, len_in_bytes = 0x80
const K3_128: &[(Msg, &str)] = &[
    (
        Msg::Lit(b""),
        concat!(
            "41b037d1734a5f8df225dd8c7de38f851efdb45c372887be655212d07251b921",
            "b052b62eaed99b46f72f2ef4cc96bfaf254ebbbec091e1a3b9e4fb5e5b619d2e",
            "0c5414800a1d882b62bb5cd1778f098b8eb6cb399d5d9d18f5d5842cf5d13d7e",
            "b00a7cff859b605da678b318bd0e65ebff70bec88c753b159a805d2c89c55961",
        ),
    ),
    (
        Msg::Lit(b"abc"),
        concat!(
            "7f1dddd13c08b543f2e2037b14cefb255b44c83cc397c1786d975653e36a6b11",
            "bdd7732d8b38adb4a0edc26a0cef4bb45217135456e58fbca1703cd6032cb134",
            "7ee720b87972d63fbf232587043ed2901bce7f22610c0419751c065922b48843",
            "1851041310ad659e4b23520e1772ab29dcdeb2002222a363f0c2b1c972b3efe1",
        ),
    ),
    (
        Msg::Lit(b"abcdef0123456789"),
        concat!(
            "3f721f208e6199fe903545abc26c837ce59ac6fa45733f1baaf0222f8b7acb04",
            "24814fcb5eecf6c1d38f06e9d0a6ccfbf85ae612ab8735dfdf9ce84c372a77c8",
            "f9e1c1e952c3a61b7567dd0693016af51d2745822663d0c2367e3f4f0bed827f",
            "eecc2aaf98c949b5ed0d35c3f1023d64ad1407924288d366ea159f46287e61ac",
        ),
    ),
    (
        Msg::Q128,
        concat!(
            "b799b045a58c8d2b4334cf54b78260b45eec544f9f2fb5bd12fb603eaee70db7",
            "317bf807c406e26373922b7b8920fa29142703dd52bdf280084fb7ef69da78af",
            "df80b3586395b433dc66cde048a258e476a561e9deba7060af40adf30c64249c",
            "a7ddea79806ee5beb9a1422949471d267b21bc88e688e4014087a0b592b695ed",
        ),
    ),
    (
        Msg::A512,
        concat!(
            "05b0bfef265dcee87654372777b7c44177e2ae4c13a27f103340d9cd11c86cb2",
            "426ffcad5bd964080c2aee97f03be1ca18e30a1f14e27bc11ebbd650f305269c",
            "c9fb1db08bf90bfc79b42a952b46daf810359e7bc36452684784a64952c343c5",
            "2e5124cd1f71d474d5197fefc571a92929c9084ffe1112cf5eea5192ebff330b",
        ),
    ),
];

fn check_xmd<F: Fn(&[u8], usize) -> Vec<u8>>(table: &[(Msg, &str)], len: usize, f: F) {
    for (i, (msg, want)) in table.iter().enumerate() {
        let got = f(&msg.bytes(), len);
        assert_eq!(hex::encode(got), *want, "vector {i}");
    }
}

#[test]
fn rfc9380_k1_expand_message_xmd_sha256() {
    let f = |m: &[u8], l| expand_message_xmd::<Sha256>(m, DST_SHA256, l).unwrap();
    check_xmd(K1_32, 32, f);
    check_xmd(K1_128, 128, f);
}

#[test]
fn rfc9380_k1_expand_message_xmd_sha256_long_dst() {
    let dst = long_dst();
    let f = |m: &[u8], l| expand_message_xmd::<Sha256>(m, &dst, l).unwrap();
    check_xmd(K1_LONG_32, 32, f);
    check_xmd(K1_LONG_128, 128, f);
}

#[test]
fn rfc9380_k3_expand_message_xmd_sha512() {
    let f = |m: &[u8], l| expand_message_xmd::<Sha512>(m, DST_SHA512, l).unwrap();
    check_xmd(K3_32, 32, f);
    check_xmd(K3_128, 128, f);
}

const P256_DST: &[u8] = b"QUUX-V01-CS02-with-P256_XMD:SHA-256_SSWU_RO_";

/// RFC 9380 J.1.1: (msg, P.x, P.y).
const J11: &[(Msg, &str, &str)] = &[
    (
        Msg::Lit(b""),
        "2c15230b26dbc6fc9a37051158c95b79656e17a1a920b11394ca91c44247d3e4",
        "8a7a74985cc5c776cdfe4b1f19884970453912e9d31528c060be9ab5c43e8415",
    ),
    (
        Msg::Lit(b"abc"),
        "0bb8b87485551aa43ed54f009230450b492fead5f1cc91658775dac4a3388a0f",
        "5c41b3d0731a27a7b14bc0bf0ccded2d8751f83493404c84a88e71ffd424212e",
    ),
    (
        Msg::Lit(b"abcdef0123456789"),
        "65038ac8f2b1def042a5df0b33b1f4eca6bff7cb0f9c6c1526811864e544ed80",
        "cad44d40a656e7aff4002a8de287abc8ae0482b5ae825822bb870d6df9b56ca3",
    ),
    (
        Msg::Q128,
        "4be61ee205094282ba8a2042bcb48d88dfbb609301c49aa8b078533dc65a0b5d",
        "98f8df449a072c4721d241a3b1236d3caccba603f916ca680f4539d2bfb3c29e",
    ),
    (
        Msg::A512,
        "457ae2981f70ca85d8e24c308b14db22f3e3862c5ea0f652ca38b5e49cd64bc5",
        "ecb9f0eadc9aeed232dabc53235368c1394c78de05dd96893eefa62b0f4757dc",
    ),
];

#[test]
fn rfc9380_j11_p256_hash_to_curve() {
    for (i, (msg, x, y)) in J11.iter().enumerate() {
        let p = P256::hash_to_group(P256_DST, &msg.bytes());
        let uncompressed = p.to_sec1_point(false);
        let bytes = uncompressed.as_bytes();
        assert_eq!(bytes.len(), 65);
        assert_eq!(hex::encode(&bytes[1..33]), *x, "vector {i}: x");
        assert_eq!(hex::encode(&bytes[33..]), *y, "vector {i}: y");
        // The compressed wire encoding carries the same x and decodes back.
        let mut enc = [0u8; 33];
        P256::encode(&p, &mut enc);
        assert_eq!(hex::encode(&enc[1..]), *x);
        let back = P256::decode(&enc).unwrap();
        assert_eq!(back.to_sec1_point(false).as_bytes(), bytes);
    }
}

/// RFC 9496 A.3: (64-byte input, encoded output) of the one-way map.
const A3: &[(&str, &str)] = &[
    (
        concat!(
            "5d1be09e3d0c82fc538112490e35701979d99e06ca3e2b5b54bffe8b4dc772c1",
            "4d98b696a1bbfb5ca32c436cc61c16563790306c79eaca7705668b47dffe5bb6",
        ),
        "3066f82a1a747d45120d1740f14358531a8f04bbffe6a819f86dfe50f44a0a46",
    ),
    (
        concat!(
            "f116b34b8f17ceb56e8732a60d913dd10cce47a6d53bee9204be8b44f6678b27",
            "0102a56902e2488c46120e9276cfe54638286b9e4b3cdb470b542d46c2068d38",
        ),
        "f26e5b6f7d362d2d2a94c5d0e7602cb4773c95a2e5c31a64f133189fa76ed61b",
    ),
    (
        concat!(
            "8422e1bbdaab52938b81fd602effb6f89110e1e57208ad12d9ad767e2e25510c",
            "27140775f9337088b982d83d7fcf0b2fa1edffe51952cbe7365e95c86eaf325c",
        ),
        "006ccd2a9e6867e6a2c5cea83d3302cc9de128dd2a9a57dd8ee7b9d7ffe02826",
    ),
    (
        concat!(
            "ac22415129b61427bf464e17baee8db65940c233b98afce8d17c57beeb7876c2",
            "150d15af1cb1fb824bbd14955f2b57d08d388aab431a391cfc33d5bafb5dbbaf",
        ),
        "f8f0c87cf237953c5890aec3998169005dae3eca1fbb04548c635953c817f92a",
    ),
    (
        concat!(
            "165d697a1ef3d5cf3c38565beefcf88c0f282b8e7dbd28544c483432f1cec767",
            "5debea8ebb4e5fe7d6f6e5db15f15587ac4d4d4a1de7191e0c1ca6664abcc413",
        ),
        "ae81e7dedf20a497e10c304a765c1767a42d6e06029758d2d7e8ef7cc4c41179",
    ),
    (
        concat!(
            "a836e6c9a9ca9f1e8d486273ad56a78c70cf18f0ce10abb1c7172ddd605d7fd2",
            "979854f47ae1ccf204a33102095b4200e5befc0465accc263175485f0e17ea5c",
        ),
        "e2705652ff9f5e44d3e841bf1c251cf7dddb77d140870d1ab2ed64f1a9ce8628",
    ),
    (
        concat!(
            "2cdc11eaeb95daf01189417cdddbf95952993aa9cb9c640eb5058d09702c7462",
            "2c9965a697a3b345ec24ee56335b556e677b30e6f90ac77d781064f866a3c982",
        ),
        "80bd07262511cdde4863f8a7434cef696750681cb9510eea557088f76d9e5065",
    ),
];

/// Non-canonical field inputs to the one-way map, all mapping to the same point (from
/// the reference implementation's test suite accompanying RFC 9496).
const A3_EDGE: &[(&str, &str)] = &[
    (
        concat!(
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "1200000000000000000000000000000000000000000000000000000000000000",
        ),
        "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
    ),
    (
        concat!(
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        ),
        "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
    ),
    (
        concat!(
            "0000000000000000000000000000000000000000000000000000000000000080",
            "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
        ),
        "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
    ),
    (
        concat!(
            "0000000000000000000000000000000000000000000000000000000000000000",
            "1200000000000000000000000000000000000000000000000000000000000080",
        ),
        "304282791023b73128d277bdcb5c7746ef2eac08dde9f2983379cb8e5ef0517f",
    ),
];

#[test]
fn rfc9496_a3_ristretto255_one_way_map() {
    for (i, (input, output)) in A3.iter().chain(A3_EDGE).enumerate() {
        let bytes: [u8; 64] = hex::decode(input).unwrap().try_into().unwrap();
        let p = Ristretto255::from_uniform_bytes(&bytes);
        let mut enc = [0u8; 32];
        Ristretto255::encode(&p, &mut enc);
        assert_eq!(hex::encode(enc), *output, "vector {i}");
    }
}

/// hash_to_group is expand_message_xmd(SHA-512, 64 bytes) followed by the A.3 map.
#[test]
fn ristretto255_hash_to_group_is_xmd_then_map() {
    let dst = b"QUUX-V01-CS02-with-ristretto255_XMD:SHA-512_R255MAP_RO_";
    for msg in [Msg::Lit(b""), Msg::Lit(b"abc"), Msg::Q128] {
        let m = msg.bytes();
        let uniform: [u8; 64] = expand_message_xmd::<Sha512>(&m, dst, 64)
            .unwrap()
            .try_into()
            .unwrap();
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        Ristretto255::encode(&Ristretto255::hash_to_group(dst, &m), &mut a);
        Ristretto255::encode(&Ristretto255::from_uniform_bytes(&uniform), &mut b);
        assert_eq!(a, b);
    }
}

/// RFC 9496 A.2: invalid encodings (non-canonical field elements, negative field
/// elements, non-square x², negative xy, s = -1).
const A2_BAD: &[&str] = &[
    "00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "f3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "ed57ffd8c914fb201471d1c3d245ce3c746fcbe63a3679d51b6a516ebebe0e20",
    "c34c4e1826e5d403b78e246e88aa051c36ccf0aafebffe137d148a2bf9104562",
    "c940e5a4404157cfb1628b108db051a8d439e1a421394ec4ebccb9ec92a8ac78",
    "47cfc5497c53dc8e61c91d17fd626ffb1c49e2bca94eed052281b510b1117a24",
    "f1c6165d33367351b0da8f6e4511010c68174a03b6581212c71c0e1d026c3c72",
    "87260f7a2f12495118360f02c26a470f450dadf34a413d21042b43b9d93e1309",
    "26948d35ca62e643e26a83177332e6b6afeb9d08e4268b650f1f5bbd8d81d371",
    "4eac077a713c57b4f4397629a4145982c661f48044dd3f96427d40b147d9742f",
    "de6a7b00deadc788eb6b6c8d20c0ae96c2f2019078fa604fee5b87d6e989ad7b",
    "bcab477be20861e01e4a0e295284146a510150d9817763caf1a6f4b422d67042",
    "2a292df7e32cababbd9de088d1d1abec9fc0440f637ed2fba145094dc14bea08",
    "f4a9e534fc0d216c44b218fa0c42d99635a0127ee2e53c712f70609649fdff22",
    "8268436f8c4126196cf64b3c7ddbda90746a378625f9813dd9b8457077256731",
    "2810e5cbc2cc4d4eece54f61c6f69758e289aa7ab440b3cbeaa21995c2f4232b",
    "3eb858e78f5a7254d8c9731174a94f76755fd3941c0ac93735c07ba14579630e",
    "a45fdc55c76448c049a1ab33f17023edfb2be3581e9c7aade8a6125215e04220",
    "d483fe813c6ba647ebbfd3ec41adca1c6130c2beeee9d9bf065c8d151c5f396e",
    "8a2e1d30050198c65a54483123960ccc38aef6848e1ec8f5f780e8523769ba32",
    "32888462f8b486c68ad7dd9610be5192bbeaf3b443951ac1a8118419d9fa097b",
    "227142501b9d4355ccba290404bde41575b037693cef1f438c47f8fbf35d1165",
    "5c37cc491da847cfeb9281d407efc41e15144c876e0170b499a96a22ed31e01e",
    "445425117cb8c90edcbc7c1cc0e74f747f2c1efa5630a967c64f287792a48a4b",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
];

#[test]
fn rfc9496_a2_ristretto255_bad_encodings_rejected() {
    for (i, bad) in A2_BAD.iter().enumerate() {
        let bytes = hex::decode(bad).unwrap();
        assert_eq!(
            Ristretto255::decode(&bytes).err(),
            Some(GroupError::NonCanonical { index: 0 }),
            "bad encoding {i} accepted"
        );
    }
}
