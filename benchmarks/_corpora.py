"""Benchmark corpora that cannot flatter the lexical arm (deterministic, no downloads).

* ``common``: a small working vocabulary shared by most memories, the way real
  memory banks look (the same tool names and "数据", "失败", "编码" in most
  lessons). Every query term occurs in at least 30 % of the memories, so every
  posting list a query touches is long.
* ``zh``: Chinese-heavy memories (long sentences, some English identifiers);
  character unigrams occur in nearly every memory.
* ``mixed``: the zh/en agent-experience sentences of ``recall_latency.py``
  (short posting lists; the friendly case, for comparison).

Each generator returns ``(texts, queries)``: ``n`` distinct memory texts and a
list of distinct query strings.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable

from langchain_hindsight.store.tokens import tokenize

__all__ = ["CORPORA", "common_vocabulary", "min_query_term_share", "mixed", "zh_heavy"]

CORE_ZH = ["数据", "失败", "编码", "文件", "接口", "重试"]
CORE_EN = ["data", "error", "encoding", "file", "retry", "timeout"]
CORE_SHARE = 0.45
"""Each core word is put in a memory with this probability (so its share is ~45 %, well above 30 %)."""
FILLER_ZH = [
    "读取",
    "导出",
    "清洗",
    "报表",
    "用户",
    "订单",
    "日志",
    "配置",
    "字段",
    "表格",
    "权限",
    "缓存",
    "分页",
    "格式",
    "时间",
    "检查",
    "更新",
    "上传",
    "下载",
    "统计",
]
FILLER_EN = [
    "pandas.read_csv",
    "requests.get",
    "json.loads",
    "subprocess.run",
    "header",
    "column",
    "batch",
    "token",
    "proxy",
    "schema",
    "index",
    "query",
    "upload",
    "parse",
    "delimiter",
    "page",
    "cache",
    "config",
    "user",
    "report",
]


def common_vocabulary(n: int, n_queries: int = 300, seed: int = 11) -> tuple[list[str], list[str]]:
    """Memories over a small shared vocabulary; queries made only of words in >= 30 % of memories."""
    rng = random.Random(seed)
    texts = []
    for i in range(n):
        zh = [w for w in CORE_ZH if rng.random() < CORE_SHARE] + rng.sample(FILLER_ZH, 3)
        en = [w for w in CORE_EN if rng.random() < CORE_SHARE] + rng.sample(FILLER_EN, 3)
        rng.shuffle(zh)
        rng.shuffle(en)
        texts.append(f"{''.join(zh)}：{' '.join(en)} (case {i})")
    queries: list[str] = []
    seen = set()
    while len(queries) < n_queries:
        words = rng.sample(CORE_ZH, rng.randint(1, 3)) + rng.sample(CORE_EN, rng.randint(1, 3))
        rng.shuffle(words)
        q = " ".join(words)
        if q not in seen or len(seen) > 2000:
            seen.add(q)
            queries.append(q)
    return texts, queries


ZH_SUBJECTS = [
    "生成销售周报的时候",
    "读取财务部门导出的CSV文件时",
    "调用第三方支付接口退款的时候",
    "清洗用户手机号和身份证号码时",
    "把订单数据写入数据库之前",
    "整理会议纪要并发送邮件时",
    "统计每日活跃用户和留存率时",
    "解析服务器日志中的时间戳时",
    "批量下载供应商发票的时候",
    "翻译产品说明书的时候",
]
ZH_ADVICE = [
    "一定要先确认数据的时间范围和统计口径",
    "需要先检查文件的编码格式再读取内容",
    "要对网络请求加上超时设置和指数退避重试",
    "应该先在测试环境验证一遍再上线",
    "必须把敏感字段脱敏之后再保存",
    "最好按主键分批处理以免内存不足",
    "要和用户确认输出格式是表格还是图表",
    "记得把失败的记录单独保存下来方便排查",
    "先用小样本跑通流程再处理全部数据",
    "注意不同部门对同一个指标的定义并不一样",
]
ZH_REASONS = [
    "否则上次就出现了乱码导致返工",
    "因为用户明确要求过这一点",
    "否则接口会频繁返回错误",
    "否则结果和财务的数字对不上",
    "这样可以避免重复计算",
    "否则任务会在半夜超时失败",
]
ZH_QUERIES = [
    "帮我生成本周的销售周报",
    "读取财务导出的CSV文件并统计金额",
    "调用支付接口给用户退款",
    "清洗用户表里的手机号",
    "把订单数据导入数据库",
    "统计上个月的日活和留存",
    "解析服务器日志找出报错时间",
    "批量下载本月的供应商发票",
    "整理今天的会议纪要并发邮件",
    "把产品说明书翻译成英文",
    "数据对不上需要排查原因",
    "文件读取出现乱码怎么办",
]


def zh_heavy(n: int, n_queries: int = 300, seed: int = 13) -> tuple[list[str], list[str]]:
    """Long Chinese memories (one sentence of three clauses); Chinese task queries."""
    rng = random.Random(seed)
    texts = [
        f"{rng.choice(ZH_SUBJECTS)}，{rng.choice(ZH_ADVICE)}，{rng.choice(ZH_REASONS)}（第{i}条经验）" for i in range(n)
    ]
    queries = [
        f"{rng.choice(ZH_QUERIES)}{'' if rng.random() < 0.5 else '，' + rng.choice(ZH_ADVICE)[:8]}"
        for _ in range(n_queries)
    ]
    return texts, queries


def mixed(n: int, n_queries: int = 300, seed: int = 7) -> tuple[list[str], list[str]]:
    """The zh/en sentences of ``recall_latency.py`` and the labelled queries (cycled)."""
    import json
    from pathlib import Path

    from recall_latency import real_texts

    root = Path(__file__).resolve().parent
    texts = real_texts(random.Random(seed), n)[:n]
    labelled = [json.loads(line)["query"] for line in (root / "data/recall_queries.jsonl").read_text().splitlines()]
    return texts, [labelled[i % len(labelled)] for i in range(n_queries)]


CORPORA: dict[str, Callable[[int], tuple[list[str], list[str]]]] = {
    "common": common_vocabulary,
    "zh": zh_heavy,
    "mixed": mixed,
}


def min_query_term_share(texts: list[str], queries: list[str], sample: int = 2000) -> float:
    """The smallest share of (a sample of) the memories that contains a query term (0 if a term is unseen)."""
    rng = random.Random(0)
    docs = texts if len(texts) <= sample else rng.sample(texts, sample)
    df: Counter[str] = Counter()
    for text in docs:
        df.update(set(tokenize(text)))
    terms = {t for q in queries for t in tokenize(q)}
    return min((df[t] / len(docs) for t in terms), default=0.0)
