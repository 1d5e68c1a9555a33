"""Small text helpers every layer shares.

:func:`clip_text` is the one way the package shortens a text (prompts,
trajectories, review lines): head and tail are kept, and a marker records the
cut in the text itself, so a clipped error message still shows how it ended.
:func:`clean_feedback` reads the correction out of a user's feedback (used when
it becomes a memory, and when forgetting that memory erases the comment).
:func:`informative` is the one rule for junk: the store refuses a unit whose
content carries no information, reflection skips one, and recall never serves one.
:func:`clean_text` makes any text encodable (what every embedding and lexical query gets).
"""

from __future__ import annotations

import re
import unicodedata

from langchain_hindsight.prompts import REFLECTION_ZH

__all__ = ["clean_feedback", "clean_text", "clip_text", "informative"]

_ACK = re.compile(
    r"^(?:好的?|好滴|谢谢(?:你)?|多谢|感谢|可以|没问题|很好|不错|收到|ok(?:ay)?|thanks?(?: you)?|thx|great|good|nice|"
    r"perfect|cool|fine|yes|yep|👍)[\s!！。.~～]*$",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"^(?:不对|不是这样|不是|错了|不正确|不行|no|nope|wrong|incorrect|that'?s (?:wrong|not right|incorrect))"
    r"(?=[\s,，。.!！:：;；]|$)[\s,，。.!！:：;；]*",
    re.IGNORECASE,
)


def clip_text(text: str, limit: int, marker: str = REFLECTION_ZH.truncation_marker) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, keeping head and tail; returns ``(text, was_cut)``.

    Two thirds of ``limit`` come from the head, the rest from the tail. The
    marker (``{cut}`` = characters removed) records the cut in the text itself;
    a marker without ``{cut}`` (``"…"``) is inserted as is.

    Example:
        >>> clip_text("a" * 50 + "b" * 50, 20, " [{cut} cut] ")
        ('aaaaaaaaaaaaa [80 cut] bbbbbbb', True)
        >>> clip_text("生成本周的销售周报并发送给经理", 9, "…")
        ('生成本周的销…给经理', True)
        >>> clip_text("short", 10)
        ('short', False)
    """
    if len(text) <= limit:
        return text, False
    head = (limit * 2) // 3
    tail = limit - head
    cut = len(text) - head - tail
    return text[:head] + marker.format(cut=cut) + (text[-tail:] if tail else ""), True


def clean_feedback(text: str) -> str | None:
    """The correction in a piece of user feedback, or ``None`` when it carries none.

    ``None`` for a bare acknowledgement ("谢谢！") and for a text without
    information (a bare "不对", "No.": :func:`informative`); the verdict itself is the
    caller's, only no memory is made of it.

    Example:
        >>> clean_feedback("不对，应该用utf-8-sig"), clean_feedback("No, you should use gbk."), clean_feedback("谢谢！")
        ('应该用utf-8-sig', 'you should use gbk.', None)
        >>> clean_feedback("不对"), clean_feedback("No."), clean_feedback("不对，用gbk")
        (None, None, '用gbk')
    """
    text = " ".join(text.split())
    if not text or _ACK.match(text):
        return None
    stripped = _NEGATION.sub("", text, count=1).strip()
    correction = stripped or text
    return correction if informative(correction) else None


# ---------------------------------------------------------------- junk: text that carries no information
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]")
"""Runs of CJK characters, and runs of other letters and digits (punctuation, spaces, symbols and emoji drop out)."""
_MIN_WEIGHT = 3
"""A text must weigh at least this: a letter or digit weighs 1, a CJK character 2 (``x``, ``ok``, ``好`` do not)."""
_EN_WORDS = (
    # acknowledgements, greetings, fillers and verdicts without content
    "ok okay okey k kk yes yeah yea yep yup ya sure no nope nah thanks thank thx ty tks cheers great good nice cool "
    "fine perfect awesome excellent done alright right hello hi hey heya bye goodbye lol hmm hm um uh ah oh ooh wow "
    "please pls plz sorry np lgtm indeed agreed agree correct wrong incorrect true false noted understood sounds got "
    "welcome wonderful amazing ack roger copy yay well really "
    # English function words (the usual stop-word list)
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself "
    "it its itself they them their theirs themselves what which who whom this that these those am is are was were be "
    "been being have has had having do does did doing a an the and but if or because as until while of at by for "
    "with about against between into through during before after above below to from up down in out on off over "
    "under again further then once here there when where why how all any both each few more most other some such "
    "only own same so than too very s t can will just don should now d ll m o re ve y ain isn aren wasn weren hasn "
    "haven hadn doesn didn won wouldn shouldn couldn mustn needn shan let lets also much many not nor"
)
_ZH_WORDS = (
    # acknowledgements, greetings, fillers and bare verdicts
    "好 好的 好滴 好哒 好嘞 好吧 好了 好啊 行 行吧 行的 可以 可 没问题 收到 "
    "谢谢 谢 感谢 多谢 谢啦 谢谢你 谢谢您 辛苦 辛苦了 明白 明白了 了解 "
    "知道 知道了 懂 懂了 嗯 嗯嗯 恩 哦 噢 喔 哈 哈哈 呵呵 嘿 嘻嘻 啊 呀 "
    "哇 唉 哎 诶 欸 额 呃 是 是的 对 对的 没错 不错 很好 太好 真好 挺好 "
    "非常 棒 厉害 完美 不对 错了 错 不是 不行 不好 你好 您好 嗨 在吗 "
    "再见 拜拜 晚安 早安 早上好 下午好 晚上好 不客气 没事 算了 继续 然后 "
    # particles and function words
    "的 了 吗 呢 吧 么 嘛 啦 哟 呗 之 地 得 着 过 也 和 与 及 或 就 都 "
    "还 又 很 太 更 最 这 那 这个 那个 这样 那样 我 你 您 他 她 它 我们 "
    "你们 他们 一下 一个 不 没 有 在"
)
_EN_EMPTY = frozenset(_EN_WORDS.split())
_ZH_EMPTY = frozenset(_ZH_WORDS.split())
_ZH_LONGEST = max(map(len, _ZH_EMPTY))
_LAUGH = re.compile(r"(?:ha|he|hi|ho)+h?|(?:lo)+l")
_REPEAT = re.compile(r"(.)\1+")


def _empty_word(word: str) -> bool:
    """An English (or other alphabetic) word that says nothing on its own; ``okkk`` and ``hahaha`` included."""
    if word in _EN_EMPTY or _REPEAT.sub(r"\1", word) in _EN_EMPTY:
        return True
    return len(word) >= 4 and _LAUGH.fullmatch(word) is not None  # haha, hehe, lolol (not "hail", "hello")


def _empty_run(run: str) -> bool:
    """A run of CJK characters made only of acknowledgements, fillers and particles (longest match first)."""
    reachable = [True] + [False] * len(run)  # reachable[i]: run[:i] splits into empty words
    last = 0  # the last reachable position: past it by a whole word's length, nothing further can be reached
    for i in range(len(run)):
        if i - last >= _ZH_LONGEST:
            return False
        if not reachable[i]:
            continue
        last = i
        for n in range(1, min(_ZH_LONGEST, len(run) - i) + 1):
            if run[i : i + n] in _ZH_EMPTY:
                reachable[i + n] = True
    return reachable[-1]


def informative(text: str) -> bool:
    """Whether ``text`` carries any information worth storing or serving as a memory.

    Not informative: a text that weighs less than 3 once punctuation, spaces,
    symbols and emoji are dropped (a letter or digit weighs 1, a Chinese, Japanese
    or Korean character 2: ``x``, ``ok``, ``好``, ``👍``), or one made only of
    acknowledgements, greetings, fillers, bare verdicts and function words, in
    Chinese or English (``好的``, ``嗯嗯``, ``thanks``, ``the``, ``了``, ``ok 好的！``).
    Short texts that name something are informative (``周一``, ``张三``, ``用gbk``,
    ``UTC+8``, ``2 GB``, ``No VPN``).

    Example:
        >>> [informative(t) for t in ("x", "ok", "好", "好的！", "thanks!!", "嗯嗯", "the", "了", "👍👍")]
        [False, False, False, False, False, False, False, False, False]
        >>> [informative(t) for t in ("用gbk", "UTC+8", "周一", "No VPN", "2 GB", "张三", "CSV用;分隔")]
        [True, True, True, True, True, True, True]
    """
    weight = 0
    empty = True
    for match in _TOKEN.finditer(text):
        token = match.group()
        cjk = _CJK_RUN.match(token) is not None
        weight += 2 * len(token) if cjk else len(token)
        if empty and not (_empty_run(token) if cjk else _empty_word(unicodedata.normalize("NFKC", token).lower())):
            empty = False  # full-width "ｏｋ" folds to "ok": only the words still in question are folded
        if not empty and weight >= _MIN_WEIGHT:
            return True
    return False


def clean_text(text: str) -> str:
    """``text`` with lone surrogates (invalid in UTF-8) replaced by ``?``, so tokenizers never choke."""
    return text.encode("utf-8", "replace").decode("utf-8")
