# ruff: noqa: UP010, UP031, UP032
"""REFERENCE TRANSCRIPTION, NOT PROJECT CODE: the official CMRC 2018 evaluation script, for differential tests.

Transcribed from ``baseline/cmrc2018_evaluate.py`` of ymcui/cmrc2018 (header "v6: compatible for both
original and SQuAD-style CMRC 2018 datasets. support python3."), statement for statement, tabs turned
into spaces.  It is kept only so that tests can compare ``scoring.cmrc2018`` with the official algorithm
on generated inputs; nothing outside tests/ imports it.  Changes, each marked ``# CHANGED``:

* ``nltk.word_tokenize(temp_str)`` -> ``nltk.word_tokenize(temp_str, preserve_line=True)``: the Punkt
  sentence split needs data that cannot be downloaded here (the one deliberate difference of
  ``scoring.cmrc2018``, documented there and tested separately);
* the unused imports (``Counter``, ``string``, ``pdb``) are dropped, and ``__main__`` became ``main(argv)``,
  which returns the printed JSON text instead of printing it, so tests can call it in-process;
* type hints, not marked (mypy checks tests/; they change no behaviour): on every signature, on the three
  variables whose first value is not of their type (``f1``, ``f1_scores``, ``output_result``), and the
  ``type: ignore`` of the nltk import (nltk has no type information).
"""
from __future__ import print_function

import argparse
import json
import re
import sys
from collections import OrderedDict
from typing import Any

import nltk  # type: ignore[import-untyped]


# split Chinese with English
def mixed_segmentation(in_str: str, rm_punc: bool = False) -> list[str]:
    in_str = str(in_str).lower().strip()
    segs_out = []
    temp_str = ""
    sp_char = ['-',':','_','*','^','/','\\','~','`','+','=',
               '，','。','：','？','！','“','”','；','’','《','》','……','·','、',
               '「','」','（','）','－','～','『','』']
    for char in in_str:
        if rm_punc and char in sp_char:
            continue
        if re.search(r'[\u4e00-\u9fa5]', char) or char in sp_char:
            if temp_str != "":
                ss = nltk.word_tokenize(temp_str, preserve_line=True)  # CHANGED: no Punkt sentence split
                segs_out.extend(ss)
                temp_str = ""
            segs_out.append(char)
        else:
            temp_str += char

    #handling last part
    if temp_str != "":
        ss = nltk.word_tokenize(temp_str, preserve_line=True)  # CHANGED: no Punkt sentence split
        segs_out.extend(ss)

    return segs_out

# remove punctuation
def remove_punctuation(in_str: str) -> str:
    in_str = str(in_str).lower().strip()
    sp_char = ['-',':','_','*','^','/','\\','~','`','+','=',
               '，','。','：','？','！','“','”','；','’','《','》','……','·','、',
               '「','」','（','）','－','～','『','』']
    out_segs = []
    for char in in_str:
        if char in sp_char:
            continue
        else:
            out_segs.append(char)
    return ''.join(out_segs)


# find longest common string
def find_lcs(s1: list[str], s2: list[str]) -> tuple[list[str], int]:
    m = [[0 for i in range(len(s2)+1)] for j in range(len(s1)+1)]
    mmax = 0
    p = 0
    for i in range(len(s1)):
        for j in range(len(s2)):
            if s1[i] == s2[j]:
                m[i+1][j+1] = m[i][j]+1
                if m[i+1][j+1] > mmax:
                    mmax=m[i+1][j+1]
                    p=i+1
    return s1[p-mmax:p], mmax

#
def evaluate(ground_truth_file: Any, prediction_file: dict[str, Any]) -> tuple[float, float, int, int]:
    f1: float = 0
    em = 0
    total_count = 0
    skip_count = 0

    data_list = ground_truth_file['data'] if  'data' in ground_truth_file else ground_truth_file
    for instance in data_list:
        para_list = instance['paragraphs'] if 'paragraphs' in instance else [instance]
        for para in para_list:
            for qas in para['qas']:
                total_count += 1
                query_id    = qas['id'] if 'id' in qas else qas['query_id']
                answers     = [x['text'] if isinstance(x, dict) else x for x in qas['answers']]

                if query_id not in prediction_file:
                    sys.stderr.write('Unanswered question: {}\n'.format(query_id))
                    skip_count += 1
                    continue

                prediction  = str(prediction_file[query_id])
                f1 += calc_f1_score(answers, prediction)
                em += calc_em_score(answers, prediction)

    f1_score = 100.0 * f1 / total_count
    em_score = 100.0 * em / total_count
    return f1_score, em_score, total_count, skip_count


def calc_f1_score(answers: list[str], prediction: str) -> float:
    f1_scores: list[float] = []
    for ans in answers:
        ans_segs = mixed_segmentation(ans, rm_punc=True)
        prediction_segs = mixed_segmentation(prediction, rm_punc=True)
        lcs, lcs_len = find_lcs(ans_segs, prediction_segs)
        if lcs_len == 0:
            f1_scores.append(0)
            continue
        precision   = 1.0*lcs_len/len(prediction_segs)
        recall      = 1.0*lcs_len/len(ans_segs)
        f1          = (2*precision*recall)/(precision+recall)
        f1_scores.append(f1)
    return max(f1_scores)


def calc_em_score(answers: list[str], prediction: str) -> int:
    em = 0
    for ans in answers:
        ans_ = remove_punctuation(ans)
        prediction_ = remove_punctuation(prediction)
        if ans_ == prediction_:
            em = 1
            break
    return em

def main(argv: list[str]) -> str:  # CHANGED: was `if __name__ == '__main__':`, printing the result
    parser = argparse.ArgumentParser(description='Evaluation Script for CMRC 2018')
    parser.add_argument('dataset_file', help='Official dataset file')
    parser.add_argument('prediction_file', help='Your prediction File')
    args = parser.parse_args(argv)
    ground_truth_file   = json.load(open(args.dataset_file, 'rb'))
    prediction_file     = json.load(open(args.prediction_file, 'rb'))
    F1, EM, TOTAL, SKIP = evaluate(ground_truth_file, prediction_file)
    AVG = (EM+F1)*0.5
    output_result: OrderedDict[str, str | int] = OrderedDict()
    output_result['AVERAGE'] = '%.3f' % AVG
    output_result['F1'] = '%.3f' % F1
    output_result['EM'] = '%.3f' % EM
    output_result['TOTAL'] = TOTAL
    output_result['SKIP'] = SKIP
    output_result['FILE'] = args.prediction_file
    return json.dumps(output_result)  # CHANGED: was print(json.dumps(output_result))
