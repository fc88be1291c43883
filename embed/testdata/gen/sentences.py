#!/usr/bin/env python3
"""Write the tokenizer parity inputs (a JSON list of strings) to stdout.

Deterministic: handwritten cases plus systematic variants of them.
"""
import json
import random

BASE = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "that caching trick for the feed",
    "We switched the feed to materialized views last Tuesday.",
    "tell me about arduino circuits",
    "Café au lait, naïve résumé, jalapeño, façade, coöperate.",
    "Ångström, Øresund, Straße, Œuvre, Ærø, Łódź, Dvořák, İstanbul.",
    "ΟΔΥΣΣΕΥΣ and Σίσυφος went to Αθήνα; ΣΟΦΟΣ.",
    "Москва — столица России, Ёлка.",
    "state-of-the-art, well-known, e-mail, co-operate, re-enter",
    "long—dash – en dash ‒ figure dash ― bar",
    "我喜欢自然语言处理。",
    "東京は日本の首都です。カタカナとひらがな。",
    "한국어 문장도 있습니다. 안녕하세요!",
    "混合 text with 中文 and English 文字.",
    "Rare CJK: 𠀀𠀁 𪚥 and compatibility 豈 更.",
    "Emoji 😀😃 are fun 🎉🚀! 👍🏽 👨‍👩‍👧",
    "func main() { fmt.Println(\"hi\") }",
    "if (a != b && c >= d) { return x->y; }",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
    "x = [i**2 for i in range(10)]  # squares",
    "git commit -m \"fix: handle nil pointer\" && git push origin main",
    "https://example.com/path/to/page?query=1&lang=en#section",
    "Email me at first.last+tag@example.co.uk or call +1 (555) 123-4567.",
    "Prices: $19.99, €5, £3.50, ¥1000, 50% off, 3/4 cup, 1,000,000.",
    "Dates: 2024-03-15, 15/03/2024, March 15th, 10:30am UTC.",
    "Version v1.2.3-beta+build.45 released on 2026-11-22.",
    "The temperature was −5 °C (23 °F) at 6 a.m.",
    "Tabs\tand\nnewlines\r\nand   multiple    spaces",
    "Non-breaking\u00a0space and thin\u2009space and ideographic\u3000space.",
    "Zero\u200bwidth\u200cjoiners\u200d and soft\u00adhyphen and BOM\ufeffhere.",
    "Control\x00chars\x07here\x1b[0m and \x7f delete.",
    "Line\u2028separator and paragraph\u2029separator.",
    "Replacement \ufffd char and private use \ue000 char.",
    "Quotes: “double”, ‘single’, «guillemets», „low“, 'ascii' and \"ascii\".",
    "Math: α + β = γ, ∑ x_i ≤ ∞, √2 ≈ 1.414, ∂f/∂x.",
    "Symbols: © ® ™ § ¶ † ‡ • … ‰ ′ ″",
    "ASCII symbols: ! \" # $ % & ' ( ) * + , - . / : ; < = > ? @ [ \\ ] ^ _ ` { | } ~",
    "Hashtags #MachineLearning and mentions @someone_else!",
    "CamelCaseIdentifier snake_case_identifier kebab-case-identifier SCREAMING_CASE",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    "pneumonoultramicroscopicsilicovolcanoconiosis is a long word",
    "a" * 99,
    "b" * 100,
    "c" * 101,
    "word " + "x" * 150 + " word",
    "[CLS] already [SEP] special [MASK] tokens [UNK] inside [PAD]",
    "lowercase [cls] is not special but [SEP][SEP] is",
    "Ünïcödé ÜBER ALLES ÉCOLE",
    "Turkish dotless ı and dotted İ, German ẞ.",
    "Vietnamese: Tiếng Việt có dấu, phở bò.",
    "Arabic: مرحبا بالعالم. Hebrew: שלום עולם.",
    "Hindi: नमस्ते दुनिया। Thai: สวัสดีชาวโลก",
    "Fullwidth ＡＢＣ１２３！ and halfwidth ｶﾀｶﾅ.",
    "Ligatures: ﬁle ﬂow ﬀ and superscripts x² y³ ½.",
    "Roman numerals Ⅻ and circled ① ② ③.",
    "I'm sure you're right, it's John's and the dogs' toys.",
    "Don't won't can't shouldn't y'all o'clock",
    "U.S.A. vs. e.g. i.e. etc. Mr. Smith Jr.",
    "...!!!???,,,;;;:::",
    "   leading and trailing spaces   ",
    "",
    " ",
    "\t\n",
    "a",
    "A",
    "unaffable unbelievable unthinkable",
    "The year 1984 and 2001: A Space Odyssey.",
    "3.14159 2.71828 6.022e23 0x1F 0b1010 1_000_000",
    "C++ and C# and F# and .NET and Node.js",
    "path/to/file.txt C:\\Users\\name\\file.doc ~/.config/app.yaml",
    "{\"key\": \"value\", \"list\": [1, 2, 3], \"nested\": {\"a\": null}}",
    "<div class=\"main\"><p>Hello &amp; welcome</p></div>",
    "**bold** _italic_ `code` ~~strike~~ > quote",
    "Question? Answer! Exclamation!? Interrobang‽",
    "The materialized view refreshes every 5 minutes via pg_cron.",
    "We decided to use bbolt instead of SQLite for the store.",
    "Her flight UA 1234 departs SFO at 07:45 and lands in JFK.",
    "My planes topic: Cessna 172, Piper Cub, Boeing 737-800.",
    "Arduino Uno with a 220Ω resistor and an LED on pin 13.",
    "Ça va? Où est la bibliothèque? À bientôt!",
    "¿Dónde está el baño? ¡Muy bien!",
    "Ich möchte ein Bier, bitte. Grüße aus München.",
    "Jag älskar smörgåsbord och kanelbullar.",
]


def variants(s, rng):
    out = [s.upper(), s.title(), s.replace(" ", "-"), s + " " + s[::-1]]
    words = s.split()
    if len(words) > 2:
        rng.shuffle(words)
        out.append(" ".join(words))
    return out


def main():
    rng = random.Random(7)
    items = list(BASE)
    for s in BASE[:40]:
        for v in variants(s, rng):
            if v not in items:
                items.append(v)
    # Very long inputs: truncation at 256 word pieces.
    items.append(" ".join(BASE[:30]) * 3)
    items.append("token " * 300)
    items.append("héllo-wörld! " * 120)
    items.append("東京" * 200)
    items.append("supercalifragilistic " * 100)
    json.dump(items, fp=__import__("sys").stdout, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
