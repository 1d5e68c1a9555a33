"""How a run really ended: a final answer that gives up, and a tool error nothing recovered from.

"Did not raise" is not success. :func:`~langchain_hindsight.capture._steps.conclude`
asks this module two questions about a run that returned normally:

* :func:`gives_up` — does the final answer give up or report that the task failed
  (``放弃：多次失败。``, ``抱歉，我无法完成这个任务``, ``I was unable to complete the task``,
  ``Sorry, I couldn't read the file``)? Then the run is a ``failure``.
* :func:`unrecovered_error` — did the run's last tool error stay unrecovered (no tool
  succeeded after it, in a later call or by the same tool)? Then it is a ``failure`` too.

The patterns are data (:data:`GIVE_UP_PATTERNS`, one entry per language and kind) and
are matched in three steps:

1. **Mentions are masked** (:data:`MENTION_PATTERNS`): failure words used as a
   modifier or a count (``失败的订单``, ``已处理3条失败记录``, ``失败率``, ``no failed
   orders``), negated (``没有失败``, ``No failures``), conditional (``读取失败时返回空表``,
   ``raises ValueError when it cannot parse``), quoted (``“放弃”按钮``) or idiomatic
   (``couldn't be happier``, ``couldn't find any errors``).
2. **Give-ups** (``strong``): the agent gives up or says the *task* failed
   (``放弃``, ``无法完成``, ``任务失败``, ``I give up``, ``unable to complete``, ``task
   failed``). They count unless a success claim follows them (``第一次读取失败…后成功读取``).
3. **Inabilities** (``soft``): a step failed or could not be done (``无法读取文件``,
   ``读取失败``, ``I couldn't open``, ``failed to``). They count only when the answer
   claims no success anywhere (``报告已生成。注意：门店 A 的数据无法获取`` is a success
   with a caveat).

A success claim (:data:`SUCCESS_PATTERNS`) is not negated (``未能完成``, ``could not
be created`` are not claims). The labelled set ``benchmarks/data/final_answers.jsonl``
(zh/en, hard negatives, a held-out split) measures it (``benchmarks/outcome_detector.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from langchain_hindsight.types import Outcome, StepType

__all__ = [
    "GIVE_UP_PATTERNS",
    "MENTION_PATTERNS",
    "OUTCOME_REASON_KEY",
    "SUCCESS_PATTERNS",
    "GiveUp",
    "answer_outcome",
    "gives_up",
    "unrecovered_error",
]

OUTCOME_REASON_KEY = "hindsight_outcome_reason"
"""Trajectory metadata key saying why a run that returned normally is a ``failure``
(``"final answer gives up: 放弃"``, ``"unrecovered tool error: FileNotFoundError: ..."``)."""

PatternKind = Literal["strong", "soft"]

_END = r"[，。；！？,.;!?:：\n]"
"""A clause boundary (zh and en)."""

GIVE_UP_PATTERNS: Mapping[str, Mapping[PatternKind, tuple[str, ...]]] = MappingProxyType(
    {
        "zh": MappingProxyType(
            {
                "strong": (
                    r"^\s*放弃(了|[：:。！!，,]|$)",
                    r"(我|只能|只好|决定|不得不|选择)[^，。；]{0,4}放弃",
                    r"放弃(本次|这个|该|此)?(任务|尝试|处理|执行)",
                    r"(无法|未能|没能|不能|没法|没办法|不能够)[^，。；]{0,4}(完成|继续|处理|执行|进行)",
                    r"(任务|请求|操作|执行|运行|处理)[^，。；\d]{0,4}(失败|未成功|没有成功|中止|终止|未完成|没有完成|没完成)",
                    r"(没有|没|未|未能|没能|不)成功",
                    r"(做不到|做不了|无能为力|搞不定|无计可施|到此为止|爱莫能助)",
                    r"(都|还是|仍然|仍|依然|一直)(不行|失败|报错|出错)",
                    r"(报告|周报|月报|结果|文件|任务|答案)[^，。；]{0,3}(没有|未|没)(能)?(生成|完成|产出|得到)",
                    r"失败了",
                    r"(完成|做|办|搞)不(了|到|定)",
                    r"(依旧|依然|仍然|还是|仍|始终)不(通过|行|成功|能)",
                    r"(先放一放|暂时搁置|先搁置|只能作罢)",
                    r"超出(了)?(我的)?(能力|处理)范围",
                    r"((这个|这|那)我(也)?不会|我不会(做|处理|弄|解决|写)|不会做|不知道(该)?怎么(做|办|处理))",
                    r"(先停在这里|先停下来|停在这里|到这里为止|只能停下)",
                ),
                "soft": (
                    r"(无法|未能|没能|不能|没法|没办法|不能够)[^，。；]{0,4}"
                    r"(读取|打开|访问|获取|连接|解析|找到|下载|上传|生成|给出|得到|识别|导入|导出|加载|运行|调用|计算)",
                    r"(读取|打开|访问|获取|连接|解析|下载|上传|生成|导入|导出|加载|调用|计算|查询|写入|保存|发送)"
                    r"[^，。；\d]{0,6}失败",
                    r"失败" + r"(?=" + _END + r"|$)",
                    r"不可用",
                    r"(无法|未能|没能|没法|没办法|不能够)[\u4e00-\u9fff]",
                    r"(读取?|打开|识别|解析|连接|找|算|生成|运行|发送|上传|下载|连|发)(不了|不出|不到|不上)",
                    r"(出现|发生|遇到)(了)?[^，。；]{0,6}(错误|异常|故障)",
                    r"请(稍后)?(再试|重试|重新)",
                    r"拒绝(了)?(连接|访问|请求)",
                    r"(做|拿|解压|打开|读|找|算|生成|运行|发送|上传|下载|登录|导出|导入|解析|识别|处理|转换|获取|跑|用|查)"
                    r"(不了|不出来|不出|不到|不上|不开)",
                    r"没有(产出|生成|得到|拿到|返回)",
                    r"(只完成了一半|未完成|不完整|中断了?|停了|卡住了?|损坏|溢出|崩溃)",
                    r"请重(跑|试|新)",
                    r"都没有",
                    r"(打|连|登|装|跑|启|起|解|读|写|找|查|拿|发|传|导|算|做|出|看|用|答|回答|解决|处理|识别|访问|弄|修|搞|订|买|帮)"
                    r"不(了(?!解)|出来|起来|上|到|清|开|进去|动|掉)",
                    r"(不能用|无法使用|用不了)",
                    r"没(能)?[\u4e00-\u9fff]{1,2}(出去|出来|成功|完)",
                    r"被(退回|拒绝|拦截|驳回|锁定|封)",
                    r"(出错|报错)" + r"(?=" + _END + r"|$)",
                ),
            }
        ),
        "en": MappingProxyType(
            {
                "strong": (
                    r"\b(I|we)\s+(have\s+to\s+|must\s+|will\s+|'ll\s+)?(give|gave)\s+up\b",
                    r"(^|[.!;:]\s*)giving\s+up\b",
                    r"\b(I'm|I\s+am|we're|we\s+are)\s+giving\s+up\b",
                    r"\b(I|we)('m|\s+am|\s+was|\s+were|\s+are)\s+(unable|not\s+able)\s+to\b",
                    r"\b(I|we)\s+(wasn't|weren't)\s+able\s+to\b",
                    r"(^|[.!;:]\s*)(unable|failed)\s+to\b",
                    r"\b(I|we)\s+(couldn't|could\s+not|can't|cannot|can\s+not)\s+"
                    r"(complete|finish|proceed|continue|do|fulfil|fulfill|handle|process|perform|help)\b",
                    r"\b(task|job|request|operation|execution|query|run|build|download|upload|import|export|"
                    r"attempts?|call|connection)\s+(has\s+|have\s+)?(failed|was\s+unsuccessful|did\s+not\s+succeed|"
                    r"didn't\s+succeed|aborted|timed\s+out)\b",
                    r"\b(task|job|run)\s+(aborted|incomplete|abandoned|terminated)\b",
                    r"\b(was|were|is|has\s+been)\s+unsuccessful\b",
                    r"\b(could\s+not|couldn't|cannot|can't)\s+be\s+"
                    r"(completed|created|generated|finished|done|processed|produced)\b",
                    r"\b(was|were|has\s+been)\s+not\s+(generated|created|completed|produced|finished)\b",
                    r"\b(no\s+result|nothing)\s+(was|were|has\s+been)\s+(produced|generated|created)\b",
                    r"\bsomething\s+went\s+wrong\b",
                    r"(^|[.!;:]\s*)no\s+luck\b",
                    r"\b(that|it|this)\s+(didn't|did\s+not|doesn't|does\s+not)\s+work\b",
                    r"\b(have|had)\s+to\s+stop\s+here\b",
                    r"\bran\s+out\s+of\s+(attempts|retries|options)\b",
                    r"\bstill\s+(fails|failing|can't|cannot|couldn't|could\s+not)\b",
                    r"\bkeeps?\s+(failing|erroring)\b",
                    r"\bI'm\s+afraid\s+I\s+(can't|cannot)\b",
                    r"\bI\s+(don't|do\s+not)\s+know\s+how\b",
                    r"\b(so\s+)?I\s+(stopped|quit|aborted)\b",
                    r"\bon\s+every\s+attempt\b",
                    r"\b(was|were|has\s+been)\s+never\s+(sent|generated|created|completed|finished|produced|delivered)\b",
                    r"\b(beyond|outside)\s+(what\s+I\s+can\s+do|my\s+(abilities|capabilities))\b",
                    r"\bstill\s+(don't|doesn't|do\s+not|does\s+not|won't|will\s+not)\b",
                    r"\bleave\s+it\s+(for\s+now|there)\b",
                    r"\b(is|was|are|were|has|have)\s+(not|n't)\s+(been\s+)?(finished|completed|done|generated|sent)\b",
                    r"\b(isn't|wasn't|aren't|weren't|hasn't|haven't)\s+(been\s+)?(finished|completed|done|generated|sent)\b",
                ),
                "soft": (
                    r"\b(couldn't|could\s+not|can't|cannot|can\s+not|wasn't\s+able\s+to|unable\s+to|failed\s+to)\s+"
                    r"[a-z]+",
                    r"\b(read|open|connection|download|upload|parse|parsing|load|loading|lookup|request)\s+failed\b",
                    r"\btimed\s+out\b",
                    r"\brefused\b",
                    r"\b(isn't|is\s+not|wasn't|was\s+not)\s+possible\b",
                    r"\b(an?\s+)?(internal\s+|unexpected\s+|unknown\s+)?error\s+(occurred|happened)\b",
                    r"\bplease\s+(try|start|run)\b.{0,20}\bagain\b",
                    r"\b\w+ing\s+error\b",
                    r"\b(didn't|did\s+not|won't|wouldn't|will\s+not)\s+(start|run|open|load|work|compile|build|install|"
                    r"extract|connect|go\s+(out|through)|send|finish|complete|succeed|parse|decode|import|export|sync|"
                    r"respond|upload|download|save|pass|dare|get)\b",
                    r"\b(produced|returned|found|got|yielded)\s+nothing\b",
                    r"\b(is|are|was|were)\s+(incomplete|corrupted|corrupt|broken|missing|unreadable)\b",
                    r"\bfail(s|ed)?\s+to\b",
                    r"\bplease\s+(rerun|re-run|retry|try\s+again)\b",
                    r"\bkeeps?\s+(returning|giving|throwing)\b",
                    r"\b(hasn't|haven't|has\s+not|have\s+not)\s+\w+\s+yet\b",
                    r"\bthere\s+(is|are)\s+no\s+(\w+\s+){0,3}(data|report|result|file|record|output|access|way)s?\b",
                    r"\btoo\s+\w+\s+(for\s+me\s+)?to\s+\w+",
                    r"\bI\s+(don't|do\s+not)\s+have\s+(the|any|access|permission|enough)\b",
                    r"\b(unusable|partial|incomplete|unavailable)\b",
                ),
            }
        ),
    }
)
"""Give-up patterns by language and kind (``strong``: the agent gives up; ``soft``: a step failed)."""

MENTION_PATTERNS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "zh": (
            r"[“\"「『‘][^”\"」』’]{0,40}[”\"」』’]",
            r"(之前|上次|以前|此前|昨天|上周|先前|刚才|那个)[^，。；]{0,12}(失败|报错|错误|问题|无法)",
            r"(为什么|为何|原因)[^，。；：]{0,10}(失败|出错|报错)",
            r"(防止|避免|以免|免得|以防)[^，。；]{0,8}(失败|出错|报错)",
            r"(一开始|起初|开始时|刚开始|最初)[^，。；]{0,6}(没|无法|失败|不)[^，。；]{0,4}",
            r"(失败|中断|报错|错误|出错)(的)?问题",
            r"(表示|意思是|指的是|代表)[^，。；]{0,20}",
            r"失败(的|率|记录|订单|笔|条|次数|项|用例|交易|请求|数|原因|问题|时|后|清单|任务清单|案例|样本)",
            r"失败\s*\d+\s*(笔|条|个|次|项|行|单)",
            r"\d+\s*(笔|条|个|次|项|行|单)\s*失败",
            r"(无|没有|没|不存在|零|未发现|没发现)[^，。；]{0,6}(失败|错误|报错|问题)",
            r"(如果|若|一旦|当|假如|万一)[^，。；]{0,12}(失败|无法|出错|报错)",
            r"(无法|不能|未能)[^，。；的]{1,6}的",
            r"(差点|险些|几乎|没有|不要|不会|别)放弃",
            r"放弃(率|按钮|购物车|的比例)",
            r"(用户|客户|顾客)[^，。；]{0,4}放弃",
        ),
        "en": (
            r"[“\"][^”\"]{0,60}[”\"]",
            r"\b(almost|nearly|never|didn't|did\s+not)\s+(gave|give|giving)\s+up\b",
            r"\bgiving\s+up\s+at\b",
            r"\b(couldn't|could\s+not)\s+be\s+(happier|better|more)\b",
            r"\b(can't|cannot|couldn't|could\s+not)\s+(wait|stress|thank|agree|recommend|emphasi[sz]e|believe|imagine|tell|think)\b",
            r"\b(nothing|no\s+\w+)\s+(that\s+)?(I|we)\s+(can't|cannot|couldn't|could\s+not)\b",
            r"\b(couldn't|could\s+not|can't|cannot|did\s+not|didn't)\s+find\s+(any|a\s+single)\s+"
            r"(error|issue|problem|bug|duplicate|anomal|discrepanc|mismatch|failure|outlier)\w*",
            r"\b(when|if|whenever|in\s+case|unless)\b[^.;,]{0,30}\b(fails?|cannot|can't|couldn't|unable)\b",
            r"\bno\s+(failures?|failed|errors?)\b",
            r"\bwhy\b[^.;:]{0,30}\b(failed|fails|failing|errored)\b",
            r"\b(means|indicates|stands\s+for)\b[^.;,]{0,30}",
            r"\bno\s+(inconsistenc|discrepanc|issue|problem|duplicate|anomal|mismatch)\w*",
            r"\buntil\b[^.;,]{0,30}",
            r"\b(keep|prevent|avoid|stop)\b[^.;,]{0,20}\b(from\s+)?(failing|erroring)\b",
            r"\b(at\s+first|initially|first)\b[^.;,]{0,10}\b(couldn't|could\s+not|failed|can't|wasn't\s+able)\b",
            r"\b(previous|earlier|yesterday's|last)\s+(failures?|failed)\b",
        ),
    }
)
"""Spans masked before the give-up patterns are matched: failure words mentioned, not reported."""

SUCCESS_PATTERNS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "zh": (
            r"(已|已经)[^，。；！？\n]{0,8}?(生成|完成|发送|保存|导入|汇总|修复|解决|提交|处理|跳过|移除|删除|补发|"
            r"退款|列出|加入|标注|执行|找到|找出|上传|更新|写入|清洗|统计|计算)",
            r"成功(?!率)",
            r"(完毕|搞定|通过)",
            r"(生成|完成|做|写)好了",
            r"^\s*(完成|好的)",
            r"(这是|以下是|如下)",
            r"顺利",
            r"(现在|目前)[^，。；]{0,8}(能|可以|正常)",
            r"(跑|做|写|修|改|连|读|发|算|导|传)(完|好|上|通)了?",
            r"(结果一致|改用|换成|所以我用了|于是我用了|改为)",
            r"[\u4e00-\u9fff](下来|出来|回来)了",
            r"(后来|最后|最终|随后)[^，。；]{0,12}(了|成功|好)",
            r"(完整|正常|无误)",
        ),
        "en": (
            r"\b(done|completed?|complete|finished|succeeded|successful(ly)?|succeeds|passes|passed|ready|saved|"
            r"generated|created|sent|loaded|imported|fixed|resolved|refunded|removed|committed|skipped|"
            r"summari[sz]ed|listed|green|reconciles?|parsed|works)\b",
            r"\bhere\s+(is|are)\b|\bhere's\b",
            r"\bnow\s+(completes|passes|works|runs|succeeds|finishes|connects)\b",
            r"\bresults?\s+(match|matches|agree|are\s+consistent)\b",
            r"\b(so|instead)\s+I\s+(used|switched|took)\b|\bI\s+used\s+(that|the|a)\b",
        ),
    }
)
"""Claims that the task (or the step) succeeded; a negated claim (``未能完成``, ``not created``) is none."""

_NEGATION = {
    "zh": re.compile(r"(没有|没能|未能|无法|不能|没|未|不)\s*$"),
    "en": re.compile(r"(\b(not|never|no|without|cannot|unable\s+to|failed\s+to)|n't)\s+(\w+\s+)?(be\s+)?$", re.I),
}
_NEG_WINDOW = 16


def _compile(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.I | re.M) for p in patterns)


_GIVE_UP = {
    lang: {kind: _compile(table[kind]) for kind in ("strong", "soft")} for lang, table in GIVE_UP_PATTERNS.items()
}
_MENTION = {lang: _compile(ps) for lang, ps in MENTION_PATTERNS.items()}
_SUCCESS = {lang: _compile(ps) for lang, ps in SUCCESS_PATTERNS.items()}


@dataclass(frozen=True, slots=True)
class GiveUp:
    """What made an answer read as giving up.

    Attributes:
        kind: ``strong`` (the agent gives up or says the task failed) or ``soft`` (a step failed,
            and the answer claims no success).
        lang: The pattern table that fired (``zh``/``en``).
        matched: The fragment of the answer that fired.
    """

    kind: PatternKind
    lang: str
    matched: str


def _mask(text: str) -> str:
    for patterns in _MENTION.values():
        for p in patterns:
            text = p.sub(lambda m: " " * len(m.group()), text)
    return text


def _claims(text: str, start: int) -> bool:
    """Whether ``text`` claims a success at or after ``start`` (negated claims do not count)."""
    for lang, patterns in _SUCCESS.items():
        negation = _NEGATION[lang]
        for p in patterns:
            for m in p.finditer(text, start):
                if not negation.search(text[max(0, m.start() - _NEG_WINDOW) : m.start()]):
                    return True
    return False


def gives_up(answer: str | None) -> GiveUp | None:
    """Whether a final answer gives up or reports failure (zh/en); ``None`` when it does not.

    Example:
        >>> gives_up("放弃：多次失败。").kind, gives_up("I was unable to complete the task").lang
        ('strong', 'en')
        >>> gives_up("上次失败的原因已经修复，报告已生成。") is None, gives_up("没有失败的订单") is None
        (True, True)
        >>> gives_up("I couldn't find any errors — the data is clean") is None
        True
    """
    if not answer or not answer.strip():
        return None
    text = _mask(answer)
    last: tuple[int, GiveUp] | None = None
    for lang, table in _GIVE_UP.items():
        for p in table["strong"]:
            for m in p.finditer(text):
                if last is None or m.end() > last[0]:
                    last = (m.end(), GiveUp("strong", lang, answer[m.start() : m.end()].strip()))
    if last is not None and not _claims(text, last[0]):
        return last[1]
    if _claims(text, 0):
        return None
    for lang, table in _GIVE_UP.items():
        for p in table["soft"]:
            found = p.search(text)
            if found is not None:
                return GiveUp("soft", lang, answer[found.start() : found.end()].strip())
    return None


def unrecovered_error(steps: Sequence[tuple[StepType, str | None]]) -> int | None:
    """Index of the run's last error when nothing recovered from it, else ``None``.

    ``steps`` are ``(type, tool name)`` pairs in run order. An error is recovered
    when a tool succeeds after it — a tool called after the error, or the same tool
    again (a retry). A tool result of a call made before the error (the other half
    of a parallel batch) does not recover it.

    Example:
        >>> unrecovered_error([("tool_call", "read"), ("error", "read"), ("final_answer", None)])
        1
        >>> unrecovered_error([("tool_call", "read"), ("error", "read"), ("tool_call", "read"),
        ...                    ("tool_result", "read"), ("final_answer", None)]) is None
        True
    """
    last = next((i for i in range(len(steps) - 1, -1, -1) if steps[i][0] == "error"), None)
    if last is None:
        return None
    tool = steps[last][1]
    called_after = False
    for kind, name in steps[last + 1 :]:
        if kind == "tool_call":
            called_after = True
        elif kind == "tool_result" and (called_after or (tool is not None and name == tool)):
            return None
    return last


def answer_outcome(answer: str | None) -> tuple[Outcome, str | None]:
    """The outcome of a run known only by its final answer, and why when it is a failure.

    ``failure`` when the answer gives up (:func:`gives_up`), ``success`` with any
    other answer, ``unknown`` without one. Graph nodes whose state holds a plain
    output (no messages) end their runs by this rule.

    Example:
        >>> answer_outcome("周报已生成。"), answer_outcome(None)
        (('success', None), ('unknown', None))
        >>> answer_outcome("抱歉，我无法完成这个任务")
        ('failure', 'final answer gives up: 无法完成')
    """
    if answer is None or not answer.strip():
        return "unknown", None
    gave_up = gives_up(answer)
    if gave_up is not None:
        return "failure", f"final answer gives up: {gave_up.matched}"
    return "success", None
