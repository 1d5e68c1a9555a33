"""Synthetic but realistic agent experiences for benchmarks (deterministic, no downloads)."""

from __future__ import annotations

import random

TOOLS = [
    "pandas.read_csv",
    "requests.get",
    "sqlalchemy.execute",
    "open",
    "subprocess.run",
    "json.loads",
    "openpyxl.load_workbook",
    "smtplib.send",
    "boto3.upload_file",
    "matplotlib.savefig",
]
PARAMS = [
    "encoding='utf-8-sig'",
    "timeout=30",
    "sep=';'",
    "dtype={'年龄': int}",
    "retries=3",
    "chunksize=10000",
    "headers={'Accept': 'application/json'}",
    "mode='a'",
    "index=False",
    "verify=False",
]
EFFECTS = [
    "avoids garbled Chinese text",
    "prevents a timeout on large files",
    "fixes the wrong delimiter",
    "stops type inference errors",
    "handles the flaky endpoint",
    "keeps memory under 1 GB",
    "returns JSON instead of HTML",
    "appends instead of overwriting",
    "drops the index column",
    "works behind the corporate proxy",
]
TASKS = [
    "data_cleaning",
    "data_analysis",
    "weekly_report",
    "monthly_report",
    "api_call",
    "file_operation",
    "database_query",
    "code_generation",
]
ZH = [
    "处理中文CSV时需要指定编码",
    "接口偶尔超时需要重试",
    "周报只统计最近七天的数据",
    "月报需要环比图表",
    "分隔符不是逗号时先用csv.Sniffer检测",
    "大文件分块读取避免内存溢出",
]


def experiences(n: int, seed: int = 7) -> list[tuple[str, str]]:
    """``n`` distinct ``(task_type, content)`` pairs."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 5 == 0:
            text = f"{rng.choice(ZH)}：调用{rng.choice(TOOLS)}时使用{rng.choice(PARAMS)}（案例{i}）"
        else:
            text = (
                f"When calling {rng.choice(TOOLS)} pass {rng.choice(PARAMS)}; it {rng.choice(EFFECTS)} "
                f"(case {i}, dataset {rng.randint(1, 500)})"
            )
        out.append((rng.choice(TASKS), text))
    return out
