"""The task-type vocabulary (one spelling per task type, or type matching fails).

Free-form labels from an LLM or a caller (``"data-clean"``, ``"清洗数据"``,
``"Data Cleaning"``) are folded onto one canonical label so that task-type
matching in recall works. What happens to a label that matches nothing depends
on who gave it: :meth:`TaskTypeVocabulary.normalize` (a model's label, a task's
text) maps it to :data:`FALLBACK_TASK_TYPE` (``"general"``);
:meth:`TaskTypeVocabulary.resolve` (a task type the caller gave: a stored
unit's, a recall's ``task_type=``, a run's) keeps it, folded, and logs that it
is outside the vocabulary at INFO: a given task type always wins.

:func:`infer_task_type` does the same for a task's *text* at serve time
(``"生成本周的销售周报"`` → ``weekly_report``): keyword and pattern evidence from
:data:`DEFAULT_TASK_PATTERNS` (Chinese and English) plus the vocabulary's own
aliases, the label with the most evidence wins.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from functools import cached_property

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight.errors import ConfigurationError

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_TASK_PATTERNS",
    "DEFAULT_TASK_TYPES",
    "FALLBACK_TASK_TYPE",
    "TaskTypeVocabulary",
    "infer_task_type",
    "normalize_task_type",
]

FALLBACK_TASK_TYPE = "general"
"""The label every unknown task type maps to."""

DEFAULT_TASK_TYPES: Mapping[str, tuple[str, ...]] = {
    "data_cleaning": ("data clean", "clean data", "cleaning", "数据清洗", "清洗数据", "清洗", "数据清理"),
    "data_analysis": ("analysis", "analyze data", "analyse data", "data analytics", "数据分析", "分析数据"),
    "weekly_report": ("weekly", "week report", "weekly summary", "周报", "生成周报", "写周报"),
    "monthly_report": ("monthly", "month report", "monthly summary", "月报", "生成月报", "写月报"),
    "code_generation": ("coding", "code gen", "codegen", "write code", "programming", "代码生成", "写代码", "编程"),
    "api_call": ("api", "http request", "rest call", "接口调用", "调用接口", "api调用"),
    "web_search": ("search", "web lookup", "internet search", "网页搜索", "搜索", "网络搜索"),
    "file_operation": ("file", "file ops", "file io", "file handling", "文件操作", "文件处理"),
    "database_query": ("sql", "db query", "query database", "数据库查询", "sql查询"),
    "document_writing": ("writing", "write document", "documentation", "文档撰写", "写文档"),
    "translation": ("translate", "翻译"),
    "summarization": ("summary", "summarize", "summarise", "总结", "摘要"),
    "scheduling": ("calendar", "meeting", "日程", "安排会议"),
    "customer_support": ("support", "customer service", "客服", "客户支持"),
    FALLBACK_TASK_TYPE: ("other", "unknown", "misc", "通用", "其他"),
}
"""Canonical task types and their accepted spellings. Extend with
:class:`TaskTypeVocabulary` rather than editing this mapping."""

_STRONG = 3.0
_HINT = 1.0
_WEAK = 0.5

DEFAULT_TASK_PATTERNS: Mapping[str, tuple[tuple[str, float], ...]] = {
    "weekly_report": (
        (r"周报", _STRONG),
        (r"\bweekly (?:sales |status |team |progress )?(?:report|summary|update|recap)s?\b", _STRONG),
        (r"\bweek(?:'s)? report\b", _STRONG),
        (r"(?:本周|上周|这周|每周|周度).{0,12}(?:报告|汇报|总结|小结|报表)", _HINT * 2),
        (r"\b(?:this|last|past|previous) week(?:'s)?\b.{0,30}\b(?:report|summary|update|recap)", _HINT * 2),
        (r"本周|上周|这周|每周|下周|周一到周日|周度", _WEAK),
        (r"\b(?:this|last|past|previous|each|every) week(?:'s)?\b|\bweekly\b", _WEAK),
    ),
    "monthly_report": (
        (r"月报", _STRONG),
        (r"\bmonthly (?:sales |status |team |financial |progress )?(?:report|summary|update|recap)s?\b", _STRONG),
        (r"\bmonth(?:'s)?[- ]end report\b|\bmonth(?:'s)? report\b", _STRONG),
        (r"(?:本月|上月|上个月|这个月|每月|月度).{0,12}(?:报告|汇报|总结|小结)", _HINT * 2),
        (r"\b(?:this|last|past|previous) month(?:'s)?\b.{0,30}\b(?:report|summary|update|recap)", _HINT * 2),
        (r"本月|上月|上个月|这个月|每月|月度|自然月", _WEAK),
        (r"\b(?:this|last|past|previous|each|every) month(?:'s)?\b|\bmonthly\b|\bmonth[- ]end\b", _WEAK),
    ),
    "data_cleaning": (
        (r"清洗|数据清理|去重|缺失值|脏数据|异常值", _STRONG),
        (r"\bclean(?:s|ing|ed)? (?:up )?(?:the |this |a )?(?:data|dataset|csv|table|records?)\b", _STRONG),
        (r"\bdata clean(?:ing|up)\b|\bdedup(?:e|licate)?\b|\bmissing values?\b|\boutliers?\b", _STRONG),
        (r"乱码|编码|格式不一致|标准化|统一格式|分隔|分号|转成日期|合并单元格|前导零|空格", _HINT),
        (r"\bcsv\b|\bencoding\b|\bnormali[sz]e\b|\bstandardi[sz]e\b|\bmalformed\b|\bseparat(?:or|ed)\b", _HINT),
        (r"\bcolumn names?\b|\bas text\b|\bparse the\b|\bdelimiter\b|\bgarbled\b", _HINT),
    ),
    "data_analysis": (
        (r"数据分析|分析.{0,8}数据|统计分析|趋势分析|同比|环比|留存|转化率|流失率|AB实验|A/B", _STRONG),
        (r"\banaly[sz](?:e|es|is|ing)\b|\bdata analytics?\b|\bstatistic(?:s|al)\b", _STRONG),
        (r"\bchurn\b|\bretention\b|\bforecast|\bconversion rate\b|\ba/b test|\bexperiment results?\b", _STRONG),
        (r"分析|统计|趋势|透视表|汇总|预测|实验|平均|均值|GMV", _HINT),
        (r"\btrends?\b|\bpivot\b|\bcorrelation\b|\baggregate\b|\bbreakdown\b|\baverage\b|\bmedian\b|\bgmv\b", _HINT),
    ),
    "code_generation": (
        (r"写代码|编写代码|代码生成|编程|写.{0,6}(?:函数|脚本|程序|类|组件|爬虫|工具)|重构|单元测试", _STRONG),
        (
            r"\b(?:write|implement|generate|refactor|build|create)\b.{0,30}"
            r"\b(?:code|function|script|class|module|program|component|scraper|crawler|tool)\b",
            _STRONG,
        ),
        (r"\brefactor(?:ing)?\b|\bunit tests?\b|\bcodegen\b", _STRONG),
        (r"代码|函数|脚本|调试|爬虫|组件|命令行|\bci\b|测试挂|vue|react", _HINT),
        (r"\bcode\b|\bfunction\b|\bscript\b|\bbug\b|\bdebug(?:ging)?\b|\bcomponent\b|\bcommand[- ]line\b", _HINT),
        (
            r"\btests? (?:pass|fail)|\bci\b|\bpipeline\b|\bmigration\b|\bvue\b|\breact\b|\bpython\b|\btypescript\b",
            _HINT,
        ),
    ),
    "api_call": (
        (r"接口调用|调用.{0,8}(?:接口|API|服务)|API调用", _STRONG),
        (r"\bcall(?:s|ing)? (?:the |an |a )?(?:\w+ )?(?:api|endpoint)s?\b|\bapi (?:call|request)s?\b", _STRONG),
        (r"接口|请求|限流|回调|未授权|翻页|分页|上传到|token", _HINT),
        (r"\bapi\b|\bendpoint\b|\bhttp\b|\brest\b|\bwebhook\b|\brate limit|\boauth\b|\btoken\b", _HINT),
        (r"\b(?:401|403|429|500|502|503)\b|\bpaginat|\bupload|\bs3\b|\bstripe\b|\bslack\b|\bgithub\b", _HINT),
    ),
    "web_search": (
        (r"网页搜索|网络搜索|上网查|网上搜|搜索.{0,6}(?:网页|网上|资料|新闻)", _STRONG),
        (r"\bsearch (?:the )?(?:web|internet|online)\b|\bweb search\b|\bgoogle\b|\blook (?:it )?up online\b", _STRONG),
        (r"搜索|检索|查找资料|搜一下", _HINT),
        (r"\bsearch(?:es|ing)?\b|\blook up\b|\bbrowse\b", _HINT),
    ),
    "file_operation": (
        (r"文件操作|文件处理|解压|压缩包|重命名|批量.{0,4}文件|共享盘", _STRONG),
        (
            r"\b(?:unzip|rename|move|copy|delete) (?:the |all )?(?:\w+ )?(?:files?|folders?|director(?:y|ies))\b",
            _STRONG,
        ),
        (r"\bunzip\b|\bzip files?\b|\bfile (?:ops|operations?|handling)\b|\bshared drive\b", _STRONG),
        (r"文件|目录|文件夹|路径|zip|归档", _HINT),
        (r"\bfiles?\b|\bfolders?\b|\bdirector(?:y|ies)\b|\bpaths?\b|\bjsonl\b|\barchive\b", _HINT),
    ),
    "database_query": (
        (r"数据库查询|SQL查询|查询.{0,8}(?:数据库|表)|写.{0,4}SQL", _STRONG),
        (r"\bsql\b|\bquery (?:the )?(?:database|db|table)\b|\bdatabase quer(?:y|ies)\b", _STRONG),
        (
            r"\b(?:postgres(?:ql)?|mysql|redis|bigquery|elasticsearch|snowflake|sqlite)\b"
            r"|\bmongo(?:db)?\b",
            _HINT * 2,
        ),
        (r"数据库|数据表|索引|一张.{0,8}表|报表库", _HINT),
        (r"\bdatabase\b|\bselect\b|\bjoin\b|\bindex\b|\btables?\b|\brows\b|\bkeys\b", _HINT),
    ),
    "document_writing": (
        (r"文档撰写|写文档|撰写|编写.{0,4}文档|技术文档|接口文档", _STRONG),
        (r"\bwrite (?:a |an |the )?(?:\w+ )?(?:document|doc|docs|readme|article|blog post|proposal|spec)\b", _STRONG),
        (r"\bdocumentation\b|\brelease notes\b|\bdocument (?:every|all|each|the)\b", _STRONG),
        (r"文档|文章|方案|说明书|readme|写一篇|写一份", _HINT),
        (r"\bdocument\b|\bdocs?\b|\barticle\b|\bproposal\b|\bdraft\b", _HINT),
    ),
    "translation": (
        (r"翻译|译成|译为", _STRONG + 1),
        (r"\btranslat(?:e|es|ed|ing|ion)\b", _STRONG + 1),
        (r"\binto (?:english|chinese|japanese|french|german|spanish)\b|英文版|中文版", _HINT),
    ),
    "summarization": (
        (r"总结|摘要|概括|归纳|提炼要点|纪要|会议记录", _STRONG),
        (r"\bsummar(?:ize|ise|izing|ising)\b|\btl;?dr\b|\bcondense\b|\bkey points\b|\bminutes\b", _STRONG),
        (r"\bsummar(?:y|ies)\b|\brecap\b", _HINT),
    ),
    "scheduling": (
        (r"日程|安排.{0,4}会议|预约|订会议室|日历", _STRONG),
        (r"\bschedul(?:e|es|ed|ing)\b|\bcalendar\b|\bappointments?\b", _STRONG),
        (r"\bbook (?:a |the )?(?:room|slot|meeting)\b", _STRONG),
        (r"会议|开会", _HINT),
        (r"\bmeetings?\b|\breschedule\b", _HINT),
    ),
    "customer_support": (
        (r"客服|客户支持|投诉|退款|工单|售后", _STRONG),
        (r"\bcustomer (?:support|service|complaint|ticket)s?\b|\bsupport tickets?\b", _STRONG),
        (r"\brefunds?\b|\bcomplaints?\b", _STRONG),
        (r"客户|用户反馈", _WEAK),
        (r"\bcustomers?\b|\btickets?\b", _WEAK),
    ),
}
"""Evidence for :func:`infer_task_type`: label → ``(regular expression, weight)`` pairs.

Matched case-insensitively against the task text; each pattern counts once. A
task's own noun (``周报``, ``weekly report``) weighs 3, a hint (``接口``, ``csv``)
1, a weak hint (``本周``, ``this week``, ``客户``) 0.5, so "本月的周报" is still a
weekly report and "算一下这个月的GMV" is analysis, not a monthly report. A label
needs at least 1 in total. Labels a vocabulary does not have are ignored; aliases
a vocabulary adds count 2 each. Tuned on the tuning split's queries
(``benchmarks/data/recall_queries.jsonl``)."""

_LABEL_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SEPARATORS = re.compile(r"[\s\-./:]+")


def _fold(label: str) -> str:
    """Lower-case, trim and turn separators into underscores."""
    return _SEPARATORS.sub("_", label.strip().lower()).strip("_")


@refuse_unknown_keywords
class TaskTypeVocabulary:
    """A closed set of task-type labels with aliases.

    Args:
        task_types: Canonical label → aliases. Defaults to :data:`DEFAULT_TASK_TYPES`.
        fallback: The label unknown inputs map to; added to the vocabulary if missing.

    Example:
        >>> vocab = TaskTypeVocabulary()
        >>> vocab.normalize("data-clean"), vocab.normalize("清洗数据"), vocab.normalize("??")
        ('data_cleaning', 'data_cleaning', 'general')
    """

    def __init__(
        self,
        task_types: Mapping[str, Iterable[str]] | None = None,
        *,
        fallback: str = FALLBACK_TASK_TYPE,
    ) -> None:
        source = DEFAULT_TASK_TYPES if task_types is None else task_types
        if not isinstance(source, Mapping) or not source:
            raise ConfigurationError("task_types must be a non-empty mapping of label -> aliases")
        canonical: dict[str, str] = {}
        alias_map: dict[str, tuple[str, ...]] = {}
        for label, aliases in source.items():
            if not isinstance(label, str) or not _LABEL_RE.match(label):
                raise ConfigurationError(f"task type label {label!r} must be lower_snake_case ASCII, 1-64 characters")
            if isinstance(aliases, str):
                raise ConfigurationError(f"aliases of {label!r} must be a list of strings, not a string")
            canonical[label] = label
            alias_list = list(aliases)
            for alias in alias_list:
                if not isinstance(alias, str) or not alias.strip():
                    raise ConfigurationError(f"alias {alias!r} of {label!r} must be a non-empty string")
                canonical[_fold(alias)] = label
            alias_map[label] = tuple(alias_list)
        if not isinstance(fallback, str) or not _LABEL_RE.match(fallback):
            raise ConfigurationError(f"fallback {fallback!r} must be lower_snake_case ASCII")
        canonical.setdefault(fallback, fallback)
        self._lookup = canonical
        self._aliases = alias_map
        self._labels = tuple(dict.fromkeys([*source.keys(), fallback]))
        self.fallback = fallback

    @property
    def labels(self) -> tuple[str, ...]:
        """The canonical labels, in definition order."""
        return self._labels

    def __contains__(self, label: object) -> bool:
        return isinstance(label, str) and label in self._labels

    def normalize(self, label: str | None) -> str:
        """Map a free-form label onto the vocabulary.

        Exact labels and aliases match after case-folding and separator folding;
        otherwise a label that starts or ends with a known one (``data_cleaning_v2``)
        or contains a Chinese alias (``帮我清洗数据``) matches; else the fallback.
        """
        if label is None:
            return self.fallback
        if not isinstance(label, str):
            raise ConfigurationError(f"task_type must be a string, got {type(label).__name__}")
        folded = _fold(label)
        if not folded:
            return self.fallback
        hit = self._lookup.get(folded)
        if hit is not None:
            return hit
        # Longest alias first so "weekly_report_draft" does not match a shorter alias.
        for alias in sorted(self._lookup, key=len, reverse=True):
            if len(alias) < 2:
                continue
            if folded.startswith(alias + "_") or folded.endswith("_" + alias):
                return self._lookup[alias]
            if not alias.isascii() and alias in folded:
                return self._lookup[alias]
        return self.fallback

    def resolve(self, label: str) -> str:
        """A task type the caller gave: its canonical label when the vocabulary knows it, else kept as given.

        Known spellings fold as in :meth:`normalize` (``"Weekly Report"`` →
        ``weekly_report``). A label the vocabulary does not know is never replaced
        by the fallback: it is kept in its folded form (``"Email"`` → ``email``,
        ``"发邮件"`` stays) and an INFO line says so, so that a memory stored with
        ``task_type="email"`` is found again by a recall with ``task_type="email"``.

        A blank label names no task type: the fallback, as in :meth:`normalize`.

        Raises:
            ConfigurationError: ``label`` is not a string.

        Example:
            >>> vocab = TaskTypeVocabulary()
            >>> vocab.resolve("Weekly Report"), vocab.resolve("Email"), vocab.resolve("general")
            ('weekly_report', 'email', 'general')
        """
        if not isinstance(label, str):
            raise ConfigurationError(f"task_type must be a string, got {type(label).__name__}")
        folded = _fold(label)
        known = self.normalize(label)
        if known != self.fallback or not folded or folded in self._lookup:
            return known
        logger.info("task type %r is not in the vocabulary: kept as %r (a given task type wins)", label, folded)
        return folded

    @cached_property
    def _evidence(self) -> tuple[tuple[str, tuple[tuple[re.Pattern[str], float], ...]], ...]:
        """Compiled patterns per label (built on first use): default patterns + the vocabulary's own aliases."""
        table: list[tuple[str, tuple[tuple[re.Pattern[str], float], ...]]] = []
        for label in self._labels:
            if label == self.fallback:
                continue
            known = {_fold(a) for a in DEFAULT_TASK_TYPES.get(label, ())}
            extra = [a for a in self._aliases.get(label, ()) if _fold(a) not in known]
            if label not in DEFAULT_TASK_PATTERNS:
                extra.append(label)
            patterns = [(re.compile(p, re.IGNORECASE), w) for p, w in DEFAULT_TASK_PATTERNS.get(label, ())]
            patterns.extend((_alias_pattern(a), _ALIAS_WEIGHT) for a in extra)
            if patterns:
                table.append((label, tuple(patterns)))
        return tuple(table)

    def infer(self, text: str | None) -> str:
        """Classify a task's text onto the vocabulary (see :func:`infer_task_type`)."""
        if text is None:
            return self.fallback
        if not isinstance(text, str):
            raise ConfigurationError(f"task text must be a string, got {type(text).__name__}")
        if not text.strip():
            return self.fallback
        exact = self._lookup.get(_fold(text))
        if exact is not None:
            return exact  # the text is a label or an alias itself
        best, best_score = self.fallback, _MIN_EVIDENCE - 1e-9
        for label, patterns in self._evidence:
            score = sum(weight for pattern, weight in patterns if pattern.search(text))
            if score > best_score:  # ties keep the earlier label
                best, best_score = label, score
        return best


_ALIAS_WEIGHT = 2.0
_MIN_EVIDENCE = 1.0
"""A label needs at least this much evidence: a weak hint alone ("本月", "this week") names no task type."""


def _alias_pattern(alias: str) -> re.Pattern[str]:
    """An alias as a pattern: ASCII as whole words (separators interchangeable), other text as a substring."""
    words = [re.escape(w) for w in _SEPARATORS.split(alias.strip().replace("_", " ")) if w]
    if alias.isascii():
        return re.compile(r"\b" + r"[\s_\-]*".join(words) + r"\b", re.IGNORECASE)
    return re.compile(r"\s*".join(words), re.IGNORECASE)


_DEFAULT_VOCABULARY = TaskTypeVocabulary()


@refuse_unknown_keywords
def normalize_task_type(label: str | None, vocabulary: TaskTypeVocabulary | None = None) -> str:
    """Normalise ``label`` with ``vocabulary`` (the default vocabulary when ``None``)."""
    return (vocabulary or _DEFAULT_VOCABULARY).normalize(label)


def infer_task_type(text: str | None, *, vocabulary: TaskTypeVocabulary | None = None) -> str:
    """The task type of a task, inferred from its text (serve time; no model call).

    Every label of ``vocabulary`` collects the weights of its patterns that
    occur in ``text`` (:data:`DEFAULT_TASK_PATTERNS`, Chinese and English, plus
    the vocabulary's own extra aliases); the label with the most evidence wins,
    ties go to the label defined first. A text that is itself a label or alias
    maps like :meth:`TaskTypeVocabulary.normalize`. Nothing found → the
    vocabulary's fallback (``"general"``).

    Args:
        text: The task as the user or agent wrote it.
        vocabulary: The labels to choose from; the default vocabulary when ``None``.

    Example:
        >>> infer_task_type("生成本周的销售周报"), infer_task_type("Draft the monthly sales report")
        ('weekly_report', 'monthly_report')
        >>> infer_task_type("清洗这份CSV里的重复行"), infer_task_type("write a poem about autumn")
        ('data_cleaning', 'general')
    """
    return (vocabulary or _DEFAULT_VOCABULARY).infer(text)
