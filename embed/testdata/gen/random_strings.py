#!/usr/bin/env python3
"""Write 1,010 seeded random strings (a JSON list) to stdout for a
differential tokenizer check: characters drawn from pools that stress the
BERT normaliser and pre-tokenizer (whitespace and control characters,
punctuation, accents and combining marks, final sigma, CJK inside and outside
the BMP, emoji with ZWJ, RTL scripts, fullwidth and compatibility forms,
private use and noncharacters, literal special tokens, over-long words), plus
ten inputs past the 256-piece truncation."""
import json
import random
import sys

POOLS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    " \t\n\r\u00a0\u2009\u3000\u2028\u2029\u200b\ufeff\x00\x07\x1b\x7f\x85",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡¿«»–—…‘’“”•·‽",
    "éèêëàâäôöûüçñÉÈÀÇÑåÅøØæÆœŒßẞıİłŁžŠčĆđ",
    "ΑΒΓΔΣσςαβγΟΔΥΣΣΕΥΣ",
    "中文字東京日本語漢字処理𠀀𠀁𪚥豈更",
    "ひらがなカタカナｶﾀｶﾅ한국어안녕",
    "😀🎉🚀👍🏽👨‍👩‍👧❤️✨",
    "\u0301\u0308\u0327\u20dd\u0483",
    "مرحبانमस्तेสวัสดีשלום",
    "ＡＢＣ１２３！ﬁﬂ²³½Ⅻ①",
    "\ue000\U000f0000\U0010fffd\ufdd0\U000e0001",
]
WORDS = ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "[cls]", "http://x.y/z?a=1",
         "state-of-the-art", "don't", "naïve", "x" * 101, "y" * 99]


def main():
    rng = random.Random(12345)
    out = []
    for _ in range(1000):
        s = []
        for _ in range(rng.randint(0, 40)):
            if rng.random() < 0.08:
                s.append(rng.choice(WORDS))
            else:
                s.append(rng.choice(rng.choice(POOLS)))
        out.append("".join(s))
    for _ in range(10):
        out.append(" ".join(rng.choice(POOLS[0]) * rng.randint(1, 12) for _ in range(300)))
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
